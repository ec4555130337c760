import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

/**
 * The states of a pipeline's table: waiting to be copied, being copied, being copied again,
 * copied and streaming, or gone from the source (dropped or renamed there).
 */
const TABLE_STATUSES = ['pending', 'snapshot', 'backfill', 'streaming', 'dropped'] as const;

const PipelineTableRow = z.object({
  table_name: z.string(),
  status: z.enum(TABLE_STATUSES),
  partitions_total: z.number(),
  partitions_done: z.number(),
  rows_total: z.number(),
  rows_done: z.number(),
  snapshot_started_at: z.string().nullable(),
  snapshot_done_at: z.string().nullable(),
  /** Set while the table is `dropped`: why, and when it was seen. */
  dropped_reason: z.string().nullable(),
  dropped_at: z.string().nullable(),
  /** Set while the sink table no longer holds the table's copy (SINK_TABLE_CHANGED): what is wrong. */
  sink_changed: z.string().nullable(),
  /** Whether its sink table held rows when the data plane last ended cleanly; null when not known. */
  sink_had_rows: z.boolean().nullable(),
});
export type PipelineTableRow = z.infer<typeof PipelineTableRow>;

const COLUMNS = sql.fragment`table_name, status, partitions_total, partitions_done, rows_total, rows_done,
  snapshot_started_at, snapshot_done_at, dropped_reason, dropped_at, sink_changed,
  sink_had_rows`;

/** Sets `column` of each of `tables` (`schema.table`) to its value in `values`, in one statement. */
const setPerTable = (
  db: CommonQueryMethods,
  pipelineId: string,
  column: 'sink_had_rows' | 'sink_changed',
  tables: readonly string[],
  values: ReturnType<typeof sql.array>,
) =>
  db.query(sql.unsafe`UPDATE pipeline_tables t SET ${sql.identifier([column])} = v.value
    FROM unnest(${sql.array(tables, 'text')}, ${values}) AS v (table_name, value)
    WHERE t.pipeline_id = ${pipelineId} AND t.table_name = v.table_name`);

export const pipelineTablesStore = {
  list: (db: CommonQueryMethods, pipelineId: string) =>
    db.any(sql.type(PipelineTableRow)`SELECT ${COLUMNS} FROM pipeline_tables WHERE pipeline_id = ${pipelineId}
      ORDER BY table_name`),

  /** Makes the rows match the definition's tables: new ones pending, removed ones forgotten. */
  sync: async (db: CommonQueryMethods, pipelineId: string, projectId: string, tables: readonly string[]) => {
    await db.query(sql.unsafe`DELETE FROM pipeline_tables WHERE pipeline_id = ${pipelineId}
      AND NOT (table_name = ANY(${sql.array(tables, 'text')}))`);
    await db.query(sql.unsafe`INSERT INTO pipeline_tables (pipeline_id, project_id, table_name)
      SELECT ${pipelineId}, ${projectId}, t FROM unnest(${sql.array(tables, 'text')}) AS t
      ON CONFLICT DO NOTHING`);
  },

  startSnapshot: (
    db: CommonQueryMethods,
    pipelineId: string,
    table: string,
    partitionsTotal: number,
    rowsTotal: number,
  ) =>
    db.query(sql.unsafe`UPDATE pipeline_tables
      SET status = CASE WHEN status = 'backfill' THEN 'backfill' ELSE 'snapshot' END, partitions_total = ${partitionsTotal},
      rows_total = ${rowsTotal}, snapshot_started_at = coalesce(snapshot_started_at, now())
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  progress: (
    db: CommonQueryMethods,
    pipelineId: string,
    table: string,
    partitionsDone: number,
    rowsDone: number,
  ) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET partitions_done = ${partitionsDone}, rows_done = ${rowsDone}
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  finishSnapshot: (db: CommonQueryMethods, pipelineId: string, table: string, rowsDone: number) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET status = 'streaming', partitions_done = partitions_total,
      rows_done = ${rowsDone}, rows_total = greatest(rows_total, ${rowsDone}), snapshot_done_at = now()
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  /** Marks tables to be copied again (backfill); their progress starts over (a dropped one's mark goes). */
  markBackfill: (db: CommonQueryMethods, pipelineId: string, tables: readonly string[]) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET status = 'backfill', partitions_total = 0, partitions_done = 0,
      rows_done = 0, snapshot_started_at = NULL, snapshot_done_at = NULL, dropped_reason = NULL, dropped_at = NULL,
      sink_changed = NULL, repairing = false
      WHERE pipeline_id = ${pipelineId} AND table_name = ANY(${sql.array(tables, 'text')})`),

  /**
   * A streaming table whose rows are being repaired: its changes are held meanwhile, past the
   * position acknowledged to the source, so a crash before the repair ends must copy it whole at
   * the next start (see backfillRepairing). It stays `streaming` to the API and to the fleet.
   */
  markRepairing: (db: CommonQueryMethods, pipelineId: string, table: string) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET repairing = true
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table} AND status = 'streaming'`),

  /** The repair of a table's rows is written, its held changes too. */
  endRepairing: (db: CommonQueryMethods, pipelineId: string, table: string) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET repairing = false
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  /** At a start: tables a repair left unfinished (a crash) are copied again, as a backfill. */
  backfillRepairing: (db: CommonQueryMethods, pipelineId: string) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET status = 'backfill', partitions_total = 0, partitions_done = 0,
      rows_done = 0, snapshot_started_at = NULL, snapshot_done_at = NULL, repairing = false
      WHERE pipeline_id = ${pipelineId} AND repairing`),

  /** The data plane ended cleanly: whether each table's (`schema.table`) sink table holds rows now. */
  noteSinkRows: (
    db: CommonQueryMethods,
    pipelineId: string,
    rows: readonly { table: string; hasRows: boolean }[],
  ) =>
    setPerTable(
      db,
      pipelineId,
      'sink_had_rows',
      rows.map((r) => r.table),
      sql.array(
        rows.map((r) => r.hasRows),
        'bool',
      ),
    ),

  /** The data plane starts writing: what its sink tables hold is not known until it ends cleanly. */
  forgetSinkRows: (db: CommonQueryMethods, pipelineId: string) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET sink_had_rows = NULL
      WHERE pipeline_id = ${pipelineId} AND sink_had_rows IS NOT NULL`),

  /** Notes, per table (`schema.table`), what is wrong with its sink table, until a backfill copies it again. */
  markSinkChanged: (
    db: CommonQueryMethods,
    pipelineId: string,
    changes: readonly { table: string; problem: string }[],
  ) =>
    setPerTable(
      db,
      pipelineId,
      'sink_changed',
      changes.map((c) => c.table),
      sql.array(
        changes.map((c) => c.problem),
        'text',
      ),
    ),

  /**
   * Marks a table gone from the source (dropped or renamed there): it is no longer replicated, and
   * the sink's copy is kept. The first sighting's time and reason stay.
   */
  markDropped: (db: CommonQueryMethods, pipelineId: string, table: string, reason: string) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET status = 'dropped', dropped_reason = ${reason},
      dropped_at = now() WHERE pipeline_id = ${pipelineId} AND table_name = ${table} AND status <> 'dropped'`),
};
