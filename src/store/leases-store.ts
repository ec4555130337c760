import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const ttl = (ms: number) => sql.fragment`make_interval(secs => ${ms / 1000})`;

/** Leases of pipelines to workers (the `owner_*` columns of pipelines). */
export const leasesStore = {
  /**
   * Takes the pipeline for `workerId` when it is free, its lease expired, or already ours; returns
   * the new fencing epoch, or null when another worker holds it.
   */
  claim: (db: CommonQueryMethods, pipelineId: string, workerId: string, ttlMs: number) =>
    db.maybeOneFirst(sql.type(z.object({ epoch: z.number() }))`UPDATE pipelines
      SET owner_worker_id = ${workerId}, lease_epoch = lease_epoch + 1, lease_expires_at = now() + ${ttl(ttlMs)}
      WHERE id = ${pipelineId}
        AND (owner_worker_id IS NULL OR owner_worker_id = ${workerId} OR lease_expires_at < now())
      RETURNING lease_epoch::int AS epoch`),

  /** Extends every lease the worker holds; returns the pipelines it still owns. */
  renew: (db: CommonQueryMethods, workerId: string, ttlMs: number) =>
    db.anyFirst(sql.type(z.object({ id: z.string() }))`UPDATE pipelines
      SET lease_expires_at = now() + ${ttl(ttlMs)}
      WHERE owner_worker_id = ${workerId} RETURNING id`),

  release: (db: CommonQueryMethods, pipelineId: string, workerId: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET owner_worker_id = NULL, lease_expires_at = NULL
      WHERE id = ${pipelineId} AND owner_worker_id = ${workerId}`),

  /** Pipelines that should run and that nobody holds (or whose holder's lease ran out), oldest first. */
  claimable: (db: CommonQueryMethods, limit: number) =>
    db.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM pipelines
      WHERE desired_state <> 'stopped' AND (owner_worker_id IS NULL OR lease_expires_at < now())
      ORDER BY created_at LIMIT ${limit}`),

  /** How many pipelines the fleet should be running, and how many of them this worker holds. */
  load: (db: CommonQueryMethods, workerId: string) =>
    db.one(sql.type(z.object({ wanted: z.number(), mine: z.number() }))`SELECT
        count(*) FILTER (WHERE desired_state <> 'stopped')::int AS wanted,
        count(*) FILTER (WHERE owner_worker_id = ${workerId})::int AS mine
      FROM pipelines`),

  /** Whether another worker holds a live lease on the pipeline. */
  heldElsewhere: (db: CommonQueryMethods, pipelineId: string, workerId: string) =>
    db.exists(sql.unsafe`SELECT 1 FROM pipelines WHERE id = ${pipelineId} AND owner_worker_id IS NOT NULL
      AND owner_worker_id <> ${workerId} AND lease_expires_at >= now()`),

  /** Leaves an action for the owner of the pipeline to carry out. */
  requestAction: (db: CommonQueryMethods, pipelineId: string, action: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET pending_action = ${action} WHERE id = ${pipelineId}`),

  /** Takes the actions left for the worker's pipelines. */
  takeActions: (db: CommonQueryMethods, workerId: string) =>
    db.any(sql.type(
      z.object({ id: z.string(), action: z.string() }),
    )`UPDATE pipelines p SET pending_action = NULL
      FROM (SELECT id, pending_action FROM pipelines WHERE owner_worker_id = ${workerId} AND pending_action IS NOT NULL
            FOR UPDATE) AS taken
      WHERE p.id = taken.id RETURNING p.id, taken.pending_action AS action`),
};
