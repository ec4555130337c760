import { type CommonQueryMethods, type FragmentSqlToken, sql } from 'slonik';
import { z } from 'zod';

const ttl = (ms: number) => sql.fragment`make_interval(secs => ${ms / 1000})`;

/**
 * The advisory lock (two-key form: this number, then a hash of the group) under which the leases
 * of one source stream's pipelines change, so that two workers never take parts of it at once.
 */
const STREAM_LOCK = 7_600_003;

/** The lock key of the stream group of the pipeline row `p`. */
const streamKey = sql.fragment`hashtext(p.project_id::text || '/' || p.source_connection)`;

/**
 * Whether a worker other than `workerId` holds a live lease on a member of the stream group of the
 * pipeline row `p` (false for a pipeline with a slot of its own). The pipelines of one source
 * connection with `source_slot = 'shared'` read one slot, which one process at a time can stream.
 */
const streamHeldByAnother = (workerId: string) => sql.fragment`(p.source_slot = 'shared' AND EXISTS (
    SELECT 1 FROM pipelines o
    WHERE o.source_slot = 'shared' AND o.project_id = p.project_id AND o.source_connection = p.source_connection
      AND o.id <> p.id AND o.owner_worker_id <> ${workerId} AND o.lease_expires_at >= now()))`;

/** Takes the lock of the stream group of each pipeline `rows` selects (aliased `p`), in one order. */
const lockStreams = (db: CommonQueryMethods, rows: FragmentSqlToken) =>
  db.query(sql.unsafe`SELECT pg_advisory_xact_lock(${STREAM_LOCK}, k)
    FROM (SELECT DISTINCT ${streamKey} AS k FROM pipelines p WHERE p.source_slot = 'shared' AND ${rows} ORDER BY k) g`);

/**
 * Leases of pipelines to workers (the `owner_*` columns of pipelines).
 *
 * A source stream is leased as a whole: the pipelines of one source connection that share its slot
 * (`source_slot = 'shared'`) are held by one worker at a time. No worker claims one of them while
 * another holds a live lease on another, and their leases change under the stream's lock. A
 * pipeline with a slot of its own is leased alone.
 */
export const leasesStore = {
  /**
   * Takes the pipeline for `workerId` when it is free, its lease expired, or already ours, and no
   * other worker holds a live lease on another pipeline of its source stream; returns the new
   * fencing epoch, or null when another worker holds it or its stream.
   */
  claim: (db: CommonQueryMethods, pipelineId: string, workerId: string, ttlMs: number) =>
    db.transaction(async (tx) => {
      await lockStreams(tx, sql.fragment`p.id = ${pipelineId}`);
      return tx.maybeOneFirst(sql.type(z.object({ epoch: z.number() }))`UPDATE pipelines p
        SET owner_worker_id = ${workerId}, lease_epoch = lease_epoch + 1, lease_expires_at = now() + ${ttl(ttlMs)}
        WHERE p.id = ${pipelineId}
          AND (p.owner_worker_id IS NULL OR p.owner_worker_id = ${workerId} OR p.lease_expires_at < now())
          AND NOT ${streamHeldByAnother(workerId)}
        RETURNING p.lease_epoch::int AS epoch`);
    }),

  /**
   * Extends every lease the worker holds; returns the pipelines it still owns. It lets go of (and
   * releases) a pipeline of a source stream another worker holds a live lease on when its own lease
   * ran out meanwhile (the other took the stream over), or when the other holds an older pipeline of
   * the stream than any it holds (two holders, whatever the cause: the older keeps the stream).
   */
  renew: (db: CommonQueryMethods, workerId: string, ttlMs: number) =>
    db.transaction(async (tx) => {
      await lockStreams(tx, sql.fragment`p.owner_worker_id = ${workerId}`);
      await tx.query(sql.unsafe`UPDATE pipelines p SET owner_worker_id = NULL, lease_expires_at = NULL
        WHERE p.owner_worker_id = ${workerId} AND p.source_slot = 'shared' AND EXISTS (
          SELECT 1 FROM pipelines o
          WHERE o.source_slot = 'shared' AND o.project_id = p.project_id AND o.source_connection = p.source_connection
            AND o.owner_worker_id <> ${workerId} AND o.lease_expires_at >= now()
            AND (p.lease_expires_at < now() OR NOT EXISTS (
              SELECT 1 FROM pipelines m
              WHERE m.owner_worker_id = ${workerId} AND m.source_slot = 'shared' AND m.project_id = p.project_id
                AND m.source_connection = p.source_connection AND (m.created_at, m.id) < (o.created_at, o.id))))`);
      return tx.anyFirst(sql.type(z.object({ id: z.string() }))`UPDATE pipelines
        SET lease_expires_at = now() + ${ttl(ttlMs)}
        WHERE owner_worker_id = ${workerId} RETURNING id`);
    }),

  release: (db: CommonQueryMethods, pipelineId: string, workerId: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET owner_worker_id = NULL, lease_expires_at = NULL
      WHERE id = ${pipelineId} AND owner_worker_id = ${workerId}`),

  /**
   * Pipelines that should run, that nobody holds (or whose holder's lease ran out), and whose source
   * stream no other worker than `workerId` holds, oldest first; `shared` for a pipeline of a stream.
   */
  claimable: (db: CommonQueryMethods, workerId: string, limit: number) =>
    db.any(sql.type(
      z.object({ id: z.string(), shared: z.boolean() }),
    )`SELECT p.id, p.source_slot = 'shared' AS shared
      FROM pipelines p
      WHERE p.desired_state <> 'stopped' AND (p.owner_worker_id IS NULL OR p.lease_expires_at < now())
        AND NOT ${streamHeldByAnother(workerId)}
      ORDER BY p.created_at LIMIT ${limit}`),

  /**
   * The claimable pipelines of the source streams the worker holds a live lease on a pipeline of,
   * oldest first: they join the instance that streams their source.
   */
  claimableOfHeldStreams: (db: CommonQueryMethods, workerId: string) =>
    db.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT p.id FROM pipelines p
      WHERE p.source_slot = 'shared' AND p.desired_state <> 'stopped'
        AND (p.owner_worker_id IS NULL OR p.lease_expires_at < now())
        AND EXISTS (
          SELECT 1 FROM pipelines h
          WHERE h.source_slot = 'shared' AND h.project_id = p.project_id AND h.source_connection = p.source_connection
            AND h.owner_worker_id = ${workerId} AND h.lease_expires_at >= now())
        AND NOT ${streamHeldByAnother(workerId)}
      ORDER BY p.created_at`),

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

  /**
   * Whether another worker holds a live lease on another pipeline of the pipeline's source stream
   * (never for a pipeline with a slot of its own): then it runs there, not on `workerId`.
   */
  streamGroupHeldElsewhere: (db: CommonQueryMethods, pipelineId: string, workerId: string) =>
    db.exists(
      sql.unsafe`SELECT 1 FROM pipelines p WHERE p.id = ${pipelineId} AND ${streamHeldByAnother(workerId)}`,
    ),

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
