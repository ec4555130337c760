import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const HistoryRow = z.object({
  at: z.string(),
  state: z.string(),
  phase: z.string(),
  events_per_second: z.coerce.number(),
  copy_rows_per_second: z.coerce.number(),
  lag_ms: z.coerce.number(),
  lag_bytes: z.coerce.number().nullable(),
  sink_errors: z.coerce.number(),
});
export type HistoryRow = z.infer<typeof HistoryRow>;

/** One point of a pipeline's history: its figures over the seconds before `at`. */
export interface HistoryPoint {
  pipelineId: string;
  state: string;
  phase: string;
  /** The mean of those seconds. */
  eventsPerSecond: number;
  /** Rows copied (snapshot or backfill, all tables) a second: the mean of those seconds. */
  copyRowsPerSecond: number;
  /** The largest of those seconds. */
  lagMs: number;
  lagBytes: number | null;
  /** Sink batches that failed in those seconds. */
  sinkErrors: number;
}

/** Pipelines' figures over time (see migrations 0022 and 0023). */
export const pipelineHistoryStore = {
  record: (db: CommonQueryMethods, points: readonly HistoryPoint[]) =>
    points.length === 0
      ? Promise.resolve()
      : db.query(sql.unsafe`INSERT INTO pipeline_history
            (pipeline_id, at, state, phase, events_per_second, copy_rows_per_second, lag_ms, lag_bytes,
            sink_errors)
          SELECT * FROM ${sql.unnest(
            points.map((p) => [
              p.pipelineId,
              new Date().toISOString(),
              p.state,
              p.phase,
              p.eventsPerSecond,
              p.copyRowsPerSecond,
              Math.round(p.lagMs),
              p.lagBytes,
              p.sinkErrors,
            ]),
            ['uuid', 'timestamptz', 'text', 'text', 'float8', 'float8', 'int8', 'int8', 'int8'],
          )}
          ON CONFLICT DO NOTHING`),

  /** The points of a pipeline since `since`, oldest first. */
  since: (db: CommonQueryMethods, pipelineId: string, since: Date) =>
    db.any(sql.type(HistoryRow)`SELECT to_json(at) #>> '{}' AS at, state, phase, events_per_second,
        copy_rows_per_second, lag_ms, lag_bytes, sink_errors
      FROM pipeline_history WHERE pipeline_id = ${pipelineId} AND at >= ${since.toISOString()}
      ORDER BY at`),

  /**
   * The points of a pipeline since `since`, oldest first, merged `bucketSeconds` at a time (several
   * of the points' 10 s): the largest lag, the mean throughputs (events and rows copied), the sum of the errors, and the state
   * and phase of the newest point of each, dated at that newest point.
   */
  merged: (db: CommonQueryMethods, pipelineId: string, since: Date, bucketSeconds: number) =>
    db.any(sql.type(HistoryRow)`SELECT to_json(max(at)) #>> '{}' AS at,
        (array_agg(state ORDER BY at DESC))[1] AS state,
        (array_agg(phase ORDER BY at DESC))[1] AS phase,
        round(avg(events_per_second)::numeric, 2) AS events_per_second,
        round(avg(copy_rows_per_second)::numeric, 2) AS copy_rows_per_second,
        max(lag_ms) AS lag_ms, max(lag_bytes) AS lag_bytes, sum(sink_errors) AS sink_errors
      FROM pipeline_history WHERE pipeline_id = ${pipelineId} AND at >= ${since.toISOString()}
      GROUP BY floor(extract(epoch FROM at) / ${bucketSeconds})
      ORDER BY max(at)`),

  /** Forgets points older than `keepMs`. */
  prune: (db: CommonQueryMethods, keepMs: number) =>
    db.query(
      sql.unsafe`DELETE FROM pipeline_history WHERE at < now() - make_interval(secs => ${keepMs / 1000})`,
    ),
};
