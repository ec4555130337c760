import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const RunRow = z.object({
  id: z.string(),
  project_id: z.string(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  duration_ms: z.number(),
  events_total: z.number(),
  outcome: z.string().nullable(),
  error: z.string().nullable(),
});
export type RunRow = z.infer<typeof RunRow>;

export const runsStore = {
  open: (db: CommonQueryMethods, pipelineId: string, projectId: string) =>
    db.oneFirst(sql.type(z.object({ id: z.string() }))`INSERT INTO pipeline_runs (pipeline_id, project_id)
      VALUES (${pipelineId}, ${projectId}) RETURNING id`),

  close: (db: CommonQueryMethods, runId: string, outcome: string, error: string | null) =>
    db.query(sql.unsafe`UPDATE pipeline_runs SET ended_at = now(), outcome = ${outcome}, error = ${error}
      WHERE id = ${runId} AND ended_at IS NULL`),

  /** Closes runs left open by a process that died; their end is unknown, so it is the time of discovery. */
  closeAbandoned: (db: CommonQueryMethods, pipelineId: string) =>
    db.query(sql.unsafe`UPDATE pipeline_runs SET ended_at = now(), outcome = 'interrupted'
      WHERE pipeline_id = ${pipelineId} AND ended_at IS NULL`),

  /** Newest first; `before` is the started_at/id cursor of the previous page. */
  page: (
    db: CommonQueryMethods,
    pipelineId: string,
    limit: number,
    before?: { startedAt: string; id: string },
  ) =>
    db.any(sql.type(RunRow)`SELECT id, project_id, started_at, ended_at,
        (extract(epoch FROM coalesce(ended_at, now()) - started_at) * 1000)::bigint AS duration_ms,
        events_total, outcome, error
      FROM pipeline_runs WHERE pipeline_id = ${pipelineId}
      ${before ? sql.fragment`AND (started_at, id) < (${before.startedAt}::timestamptz, ${before.id}::uuid)` : sql.fragment``}
      ORDER BY started_at DESC, id DESC LIMIT ${limit}`),
};
