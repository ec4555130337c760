import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const PipelineRow = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  source_connection: z.string(),
  source_tables: z.array(z.string()),
  source_publication: z.string().nullable(),
  source_slot: z.enum(['shared', 'own']),
  sink_connection: z.string(),
  sink_properties: z.record(z.string()),
  schema_policy: z.enum(['review', 'auto', 'ignore']),
  snapshot_options: z.object({ parallelism: z.number().optional(), partition_rows: z.number().optional() }),
  verify_options: z.object({ interval: z.string().optional(), source_share: z.number().optional() }),
  generation: z.number(),
  owner_worker_id: z.string().nullable(),
  desired_state: z.string(),
  state: z.string(),
  state_reason: z.string().nullable(),
  error: z.string().nullable(),
  last_checkpoint_at: z.string().nullable(),
  last_checkpoint_lsn: z.string().nullable(),
  events_total: z.number(),
  sink_errors_total: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PipelineRow = z.infer<typeof PipelineRow>;

const COLUMNS = sql.fragment`id, project_id, name, source_connection, source_tables, source_publication, source_slot, sink_connection,
  sink_properties, schema_policy, snapshot_options, verify_options, generation, owner_worker_id, desired_state, state, state_reason, error, last_checkpoint_at,
  last_checkpoint_lsn, events_total, sink_errors_total, created_at, updated_at`;

/** The user-given part of a pipeline. */
export interface PipelineDefinitionWrite {
  sourceConnection: string;
  sourceTables: readonly string[];
  /** A publication the user made at the source; null: the pipeline's own. */
  sourcePublication: string | null;
  /** Whether the pipeline reads its source connection's shared stream or a slot of its own. */
  sourceSlot: 'shared' | 'own';
  sinkConnection: string;
  sinkProperties: Record<string, string>;
  snapshotOptions: { parallelism?: number; partition_rows?: number };
  /** The verification schedule and throttle, as given (`{}`: no schedule, no throttle). */
  verifyOptions: { interval?: string; source_share?: number };
  schemaPolicy: 'review' | 'auto' | 'ignore';
}

export const pipelinesStore = {
  list: (db: CommonQueryMethods, projectId: string) =>
    db.any(
      sql.type(PipelineRow)`SELECT ${COLUMNS} FROM pipelines WHERE project_id = ${projectId} ORDER BY name`,
    ),

  /** Every project's pipelines (project filtering off), by name then project. */
  listAll: (db: CommonQueryMethods) =>
    db.any(sql.type(PipelineRow)`SELECT ${COLUMNS} FROM pipelines ORDER BY name, project_id`),

  find: (db: CommonQueryMethods, projectId: string, name: string) =>
    db.maybeOne(
      sql.type(
        PipelineRow,
      )`SELECT ${COLUMNS} FROM pipelines WHERE project_id = ${projectId} AND name = ${name}`,
    ),

  insert: (db: CommonQueryMethods, projectId: string, name: string, d: PipelineDefinitionWrite) =>
    db.one(sql.type(PipelineRow)`INSERT INTO pipelines
        (project_id, name, source_connection, source_tables, source_publication, source_slot, sink_connection,
         sink_properties, snapshot_options, verify_options, schema_policy)
      VALUES (${projectId}, ${name}, ${d.sourceConnection}, ${sql.array(d.sourceTables, 'text')}, ${d.sourcePublication},
        ${d.sourceSlot},
        ${d.sinkConnection}, ${sql.jsonb(d.sinkProperties)}, ${sql.jsonb(d.snapshotOptions)},
        ${sql.jsonb(d.verifyOptions)}, ${d.schemaPolicy})
      RETURNING ${COLUMNS}`),

  /**
   * Replaces the definition and bumps the generation so a running pipeline reloads it; with
   * `generation`, only while the stored one is that (else no row).
   */
  updateDefinition: (
    db: CommonQueryMethods,
    projectId: string,
    name: string,
    d: PipelineDefinitionWrite,
    generation: number | null = null,
  ) =>
    db.maybeOne(sql.type(PipelineRow)`UPDATE pipelines SET
        source_connection = ${d.sourceConnection}, source_tables = ${sql.array(d.sourceTables, 'text')},
        source_publication = ${d.sourcePublication}, source_slot = ${d.sourceSlot},
        sink_connection = ${d.sinkConnection}, sink_properties = ${sql.jsonb(d.sinkProperties)},
        snapshot_options = ${sql.jsonb(d.snapshotOptions)}, verify_options = ${sql.jsonb(d.verifyOptions)},
        schema_policy = ${d.schemaPolicy},
        generation = generation + 1, updated_at = now()
      WHERE project_id = ${projectId} AND name = ${name}
        AND (${generation}::bigint IS NULL OR generation = ${generation}::bigint)
      RETURNING ${COLUMNS}`),

  /**
   * The pipelines of a project's shared stream of a source connection: their tables, where each
   * needs the stream from (null: never claimed), and whether the stream let it go.
   */
  streamMembers: (db: CommonQueryMethods, projectId: string, sourceConnection: string) =>
    db.any(sql.type(
      z.object({
        id: z.string(),
        source_tables: z.array(z.string()),
        stream_position: z.string().nullable(),
        released: z.boolean(),
      }),
    )`SELECT id, source_tables, stream_position, stream_released_at IS NOT NULL AS released FROM pipelines
      WHERE project_id = ${projectId} AND source_connection = ${sourceConnection} AND source_slot = 'shared'`),

  /** Notes where pipelines of a shared stream need it from (see streamMembers). */
  saveStreamPositions: (db: CommonQueryMethods, positions: readonly { id: string; lsn: string }[]) =>
    db.query(sql.unsafe`UPDATE pipelines p SET stream_position = v.lsn
      FROM unnest(${sql.array(
        positions.map((p) => p.id),
        'uuid',
      )}::uuid[], ${sql.array(
        positions.map((p) => p.lsn),
        'text',
      )}::text[]) AS v(id, lsn)
      WHERE p.id = v.id`),

  /** Where a pipeline of a shared stream needed the stream from, as last noted; null when never. */
  streamPositionOf: (db: CommonQueryMethods, id: string) =>
    db.maybeOneFirst(
      sql.type(
        z.object({ stream_position: z.string().nullable() }),
      )`SELECT stream_position FROM pipelines WHERE id = ${id}`,
    ),

  /** The shared stream let these pipelines go: their next start copies their tables again. */
  markStreamReleased: (db: CommonQueryMethods, ids: readonly string[]) =>
    db.query(sql.unsafe`UPDATE pipelines SET stream_released_at = now()
      WHERE id = ANY(${sql.array(ids, 'uuid')}) AND stream_released_at IS NULL`),

  /** Whether the shared stream let the pipeline go since its tables were last copied. */
  isStreamReleased: (db: CommonQueryMethods, id: string) =>
    db.exists(sql.unsafe`SELECT 1 FROM pipelines WHERE id = ${id} AND stream_released_at IS NOT NULL`),

  /** Its tables are marked to be copied again: the release is dealt with. */
  clearStreamRelease: (db: CommonQueryMethods, id: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET stream_released_at = NULL WHERE id = ${id}`),

  findById: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(PipelineRow)`SELECT ${COLUMNS} FROM pipelines WHERE id = ${id}`),

  setDesiredState: (db: CommonQueryMethods, id: string, desired: 'stopped' | 'running' | 'paused') =>
    db.query(
      sql.unsafe`UPDATE pipelines SET desired_state = ${desired}, updated_at = now() WHERE id = ${id}`,
    ),

  /**
   * Compare-and-set of an accepted action: moves the stored state from `from` to `to` and sets the
   * desired state, only if the state is still `from`. False when another request (on any
   * instance) changed it first.
   */
  transition: async (
    db: CommonQueryMethods,
    id: string,
    from: string,
    to: string,
    desired: 'stopped' | 'running' | 'paused',
  ) =>
    (
      await db.query(sql.unsafe`UPDATE pipelines SET state = ${to}, desired_state = ${desired}, updated_at = now()
        WHERE id = ${id} AND state = ${from}`)
    ).rowCount === 1,

  markSourcePrepared: (db: CommonQueryMethods, id: string) =>
    db.query(
      sql.unsafe`UPDATE pipelines SET source_prepared_at = coalesce(source_prepared_at, now()) WHERE id = ${id}`,
    ),

  isSourcePrepared: (db: CommonQueryMethods, id: string) =>
    db.exists(sql.unsafe`SELECT 1 FROM pipelines WHERE id = ${id} AND source_prepared_at IS NOT NULL`),

  /** For the given pipelines, in one query: the definition generation and the tables waiting for a backfill. */
  followUps: (db: CommonQueryMethods, ids: readonly string[]) =>
    db.any(sql.type(z.object({ id: z.string(), generation: z.number(), backfill: z.array(z.string()) }))`
      SELECT p.id, p.generation,
        coalesce(array_agg(t.table_name ORDER BY t.table_name) FILTER (WHERE t.status = 'backfill'), '{}') AS backfill
      FROM pipelines p LEFT JOIN pipeline_tables t ON t.pipeline_id = p.id
      WHERE p.id = ANY(${sql.array(ids, 'uuid')}) GROUP BY p.id`),

  /**
   * Records the state the pipeline's actor is in. With `owner`, only while that worker holds the
   * pipeline: a worker that lost its lease cannot overwrite what the new owner records.
   */
  setState: (db: CommonQueryMethods, id: string, state: string, error: string | null, owner?: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET state = ${state}, error = ${error}, updated_at = now() WHERE id = ${id}
      ${owner ? sql.fragment`AND (owner_worker_id = ${owner} OR owner_worker_id IS NULL)` : sql.fragment``}`),

  /**
   * Adds what the data plane did since the last call, to the pipeline and to its run (`runId`), in
   * one statement: both or neither, and no transaction left open on the pipeline's row by a process
   * frozen between two statements (its lock would hold up the other workers' leases).
   */
  recordProgress: (
    db: CommonQueryMethods,
    id: string,
    p: { checkpointLsn: string | null; checkpointAt: string | null; events: number; sinkErrors: number },
    runId: string | null,
  ) =>
    // The checkpoint only moves forward: a worker that lost its lease may still report an older one.
    db.query(sql.unsafe`WITH run AS (
        UPDATE pipeline_runs SET events_total = events_total + ${p.events}
        WHERE id = ${runId}::uuid AND ${p.events}::bigint > 0 RETURNING id
      )
      UPDATE pipelines SET
        last_checkpoint_lsn = CASE WHEN last_checkpoint_lsn IS NULL
            OR ${p.checkpointLsn}::pg_lsn > last_checkpoint_lsn::pg_lsn
          THEN coalesce(${p.checkpointLsn}, last_checkpoint_lsn) ELSE last_checkpoint_lsn END,
        last_checkpoint_at = greatest(${p.checkpointAt}::timestamptz, last_checkpoint_at),
        events_total = events_total + ${p.events}, sink_errors_total = sink_errors_total + ${p.sinkErrors}
      WHERE id = ${id}`),

  delete: (db: CommonQueryMethods, projectId: string, name: string) =>
    db.query(sql.unsafe`DELETE FROM pipelines WHERE project_id = ${projectId} AND name = ${name}`),

  /** Pipelines whose source or sink names the connection. */
  usingConnection: (db: CommonQueryMethods, projectId: string, connection: string) =>
    db.any(sql.type(z.object({ name: z.string(), state: z.string() }))`SELECT name, state FROM pipelines
      WHERE project_id = ${projectId} AND (source_connection = ${connection} OR sink_connection = ${connection})
      ORDER BY name`),

  /** The pipelines of a project that name any of `connections`, with the connections they name. */
  usingConnections: (db: CommonQueryMethods, projectId: string, connections: readonly string[]) =>
    db.any(sql.type(
      z.object({
        name: z.string(),
        state: z.string(),
        source_connection: z.string(),
        sink_connection: z.string(),
      }),
    )`SELECT name, state, source_connection, sink_connection FROM pipelines
      WHERE project_id = ${projectId}
        AND (source_connection = ANY(${sql.array(connections, 'text')}) OR sink_connection = ANY(${sql.array(connections, 'text')}))
      ORDER BY name`),

  /** How many pipelines are in the given state: of one project, or of every project (null). */
  countInState: (db: CommonQueryMethods, state: string, projectId: string | null) =>
    db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM pipelines
      WHERE state = ${state} ${projectId === null ? sql.fragment`` : sql.fragment`AND project_id = ${projectId}`}`),
};
