import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import type { TableVerdict } from '../core/verdict.js';

const VerificationRow = z.object({
  id: z.string(),
  project_id: z.string(),
  pipeline_id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']),
  result: z.enum(['matched', 'differs', 'not_verified']).nullable(),
  tables_requested: z.array(z.string()),
  tables: z.array(z.record(z.string(), z.unknown())),
  rows_read: z.coerce.number(),
  source_share: z.coerce.number(),
  trigger: z.enum(['request', 'schedule', 'repair']),
  repair_of: z.string().nullable(),
  repair_status: z.enum(['queued', 'running', 'completed', 'failed']).nullable(),
  repair_error: z.string().nullable(),
  repaired_by: z.string().nullable(),
  error: z.string().nullable(),
  worker_id: z.string().nullable(),
  cancel_requested: z.boolean(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type VerificationRow = z.infer<typeof VerificationRow>;

const COLUMNS = sql.fragment`id, project_id, pipeline_id, status, result, tables_requested, tables, rows_read,
  source_share, trigger, repair_of, repair_status, repair_error, repaired_by, error, worker_id, cancel_requested,
  to_json(created_at) #>> '{}' AS created_at, to_json(started_at) #>> '{}' AS started_at,
  to_json(finished_at) #>> '{}' AS finished_at`;

export interface NewVerification {
  projectId: string;
  pipelineId: string;
  tables: readonly string[];
  sourceShare: number;
  trigger: 'request' | 'schedule' | 'repair';
  repairOf?: string;
}

const ScheduleRow = z.object({
  pipeline_id: z.string(),
  project_id: z.string(),
  interval: z.string(),
  source_share: z.number().nullable(),
  last_at: z.string().nullable(),
});
export type ScheduleRow = z.infer<typeof ScheduleRow>;

/** Verifications of pipelines: what was asked, where each stands, and what it found. */
export const verificationsStore = {
  /** Queues a verification; throws UniqueIntegrityConstraintViolationError when one is queued or running. */
  create: (db: CommonQueryMethods, v: NewVerification) =>
    db.one(sql.type(VerificationRow)`INSERT INTO verifications
        (project_id, pipeline_id, status, tables_requested, source_share, trigger, repair_of)
      VALUES (${v.projectId}, ${v.pipelineId}, 'queued', ${sql.array([...v.tables], 'text')}, ${v.sourceShare},
        ${v.trigger}, ${v.repairOf ?? null})
      RETURNING ${COLUMNS}`),

  find: (db: CommonQueryMethods, pipelineId: string, id: string) =>
    db.maybeOne(sql.type(VerificationRow)`SELECT ${COLUMNS} FROM verifications
      WHERE pipeline_id = ${pipelineId} AND id = ${id}`),

  /** The newest first. */
  list: (db: CommonQueryMethods, pipelineId: string, limit: number) =>
    db.any(sql.type(VerificationRow)`SELECT ${COLUMNS} FROM verifications
      WHERE pipeline_id = ${pipelineId} ORDER BY created_at DESC, id LIMIT ${limit}`),

  /** The queued or running verification of a pipeline, if any. */
  active: (db: CommonQueryMethods, pipelineId: string) =>
    db.maybeOne(sql.type(VerificationRow)`SELECT ${COLUMNS} FROM verifications
      WHERE pipeline_id = ${pipelineId} AND status IN ('queued', 'running')`),

  /** Queued or running verifications of these pipelines. */
  activeOf: (db: CommonQueryMethods, pipelineIds: readonly string[]) =>
    db.any(sql.type(VerificationRow)`SELECT ${COLUMNS} FROM verifications
      WHERE pipeline_id = ANY(${sql.array([...pipelineIds], 'uuid')}) AND status IN ('queued', 'running')
      ORDER BY created_at`),

  /** Takes a queued verification for this worker; false when another took it or it was cancelled. */
  claim: async (db: CommonQueryMethods, id: string, workerId: string) =>
    (
      await db.query(sql.unsafe`UPDATE verifications SET status = 'running', worker_id = ${workerId},
        started_at = now() WHERE id = ${id} AND status = 'queued'`)
    ).rowCount === 1,

  progress: (db: CommonQueryMethods, id: string, tables: readonly TableVerdict[], rowsRead: number) =>
    db.query(sql.unsafe`UPDATE verifications SET tables = ${sql.jsonb(tables as never)}, rows_read = ${rowsRead}
      WHERE id = ${id}`),

  finish: (
    db: CommonQueryMethods,
    id: string,
    end: {
      status: 'completed' | 'failed' | 'cancelled';
      result?: string;
      tables: readonly TableVerdict[];
      rowsRead: number;
      differingKeys?: Record<string, string[][]>;
      error?: string;
    },
  ) =>
    db.query(sql.unsafe`UPDATE verifications SET status = ${end.status}, result = ${end.result ?? null},
        tables = ${sql.jsonb(end.tables as never)}, rows_read = ${end.rowsRead},
        differing_keys = ${sql.jsonb((end.differingKeys ?? {}) as never)}, error = ${end.error ?? null},
        finished_at = now()
      WHERE id = ${id} AND status IN ('queued', 'running')`),

  /** Asks the worker running it to stop; a queued one is cancelled at once. True when there was one to cancel. */
  cancel: async (db: CommonQueryMethods, id: string) =>
    (
      await db.query(sql.unsafe`UPDATE verifications
        SET cancel_requested = true,
            status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
            finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
        WHERE id = ${id} AND status IN ('queued', 'running')`)
    ).rowCount === 1,

  cancelRequested: async (db: CommonQueryMethods, id: string) =>
    (await db.maybeOneFirst(sql.type(
      z.object({ c: z.boolean() }),
    )`SELECT cancel_requested AS c FROM verifications
      WHERE id = ${id}`)) === true,

  differingKeys: async (db: CommonQueryMethods, id: string): Promise<Record<string, string[][]>> =>
    ((await db.maybeOneFirst(sql.type(z.object({ k: z.record(z.string(), z.array(z.array(z.string()))) }))`
      SELECT differing_keys AS k FROM verifications WHERE id = ${id}`)) as Record<
      string,
      string[][]
    > | null) ?? {},

  /** Queues a repair for the pipeline's worker; false when one is queued or running already. */
  queueRepair: async (db: CommonQueryMethods, id: string) =>
    (
      await db.query(sql.unsafe`UPDATE verifications SET repair_status = 'queued', repair_error = NULL
        WHERE id = ${id} AND repair_status IS DISTINCT FROM 'queued' AND repair_status IS DISTINCT FROM 'running'`)
    ).rowCount === 1,

  /** Takes a queued repair for this worker; false when another took it. */
  claimRepair: async (db: CommonQueryMethods, id: string) =>
    (
      await db.query(sql.unsafe`UPDATE verifications SET repair_status = 'running'
        WHERE id = ${id} AND repair_status = 'queued'`)
    ).rowCount === 1,

  /** Verifications of these pipelines whose repair is queued or running. */
  repairsOf: (db: CommonQueryMethods, pipelineIds: readonly string[]) =>
    db.any(sql.type(VerificationRow)`SELECT ${COLUMNS} FROM verifications
      WHERE pipeline_id = ANY(${sql.array([...pipelineIds], 'uuid')}) AND repair_status IN ('queued', 'running')`),

  endRepair: (db: CommonQueryMethods, id: string, end: { error?: string; verifiedBy?: string }) =>
    db.query(sql.unsafe`UPDATE verifications SET repair_status = ${end.error ? 'failed' : 'completed'},
        repair_error = ${end.error ?? null}, repaired_by = COALESCE(${end.verifiedBy ?? null}::uuid, repaired_by)
      WHERE id = ${id}`),

  /** The schedules of these pipelines, with when each was last verified (however asked). */
  schedules: (db: CommonQueryMethods, pipelineIds: readonly string[]) =>
    db.any(sql.type(
      ScheduleRow,
    )`SELECT p.id AS pipeline_id, p.project_id, p.verify_options->>'interval' AS interval,
        (p.verify_options->>'source_share')::float8 AS source_share,
        (SELECT to_json(max(v.created_at)) #>> '{}' FROM verifications v WHERE v.pipeline_id = p.id) AS last_at
      FROM pipelines p
      WHERE p.id = ANY(${sql.array([...pipelineIds], 'uuid')}) AND p.verify_options ? 'interval'`),

  /** Marks verifications a worker no longer runs (it stopped, or lost the pipeline) as failed. */
  interrupt: (db: CommonQueryMethods, ids: readonly string[], why: string) =>
    db.query(sql.unsafe`UPDATE verifications SET status = 'failed', error = ${why}, finished_at = now()
      WHERE id = ANY(${sql.array([...ids], 'uuid')}) AND status = 'running'`),

  /** Marks repairs no worker runs any more as failed. */
  interruptRepairs: (db: CommonQueryMethods, ids: readonly string[], why: string) =>
    db.query(sql.unsafe`UPDATE verifications SET repair_status = 'failed', repair_error = ${why}
      WHERE id = ANY(${sql.array([...ids], 'uuid')}) AND repair_status = 'running'`),
};
