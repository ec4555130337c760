import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { formatLsn } from '../core/lsn.js';
import type { SnapshotStamp } from '../core/source.js';

const PartitionRow = z.object({
  table_name: z.string(),
  partition_id: z.string(),
  lower_bound: z.string().nullable(),
  upper_bound: z.string().nullable(),
  rows_done: z.number().nullable(),
  done_at: z.string().nullable(),
  copied_in_visibility: z.string().nullable(),
  copied_in_lsn: z.string().nullable(),
});
export type PartitionRow = z.infer<typeof PartitionRow>;

export const snapshotPartitionsStore = {
  list: (db: CommonQueryMethods, pipelineId: string, table?: string) =>
    db.any(sql.type(
      PartitionRow,
    )`SELECT table_name, partition_id, lower_bound, upper_bound, rows_done, done_at,
        copied_in_visibility, copied_in_lsn
      FROM snapshot_partitions WHERE pipeline_id = ${pipelineId}
      ${table === undefined ? sql.fragment`` : sql.fragment`AND table_name = ${table}`}
      ORDER BY table_name, partition_id::int`),

  /** Stores a table's plan, replacing any earlier one. */
  savePlan: async (
    db: CommonQueryMethods,
    pipelineId: string,
    table: string,
    partitions: readonly { partitionId: string; lower: string | null; upper: string | null }[],
  ) => {
    await db.query(
      sql.unsafe`DELETE FROM snapshot_partitions WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`,
    );
    await db.query(sql.unsafe`INSERT INTO snapshot_partitions (pipeline_id, table_name, partition_id, lower_bound, upper_bound)
      SELECT ${pipelineId}, ${table}, p.id, p.lo, p.hi
      FROM unnest(${sql.array(
        partitions.map((p) => p.partitionId),
        'text',
      )}::text[], ${sql.array(
        partitions.map((p) => p.lower),
        'text',
      )}::text[], ${sql.array(
        partitions.map((p) => p.upper),
        'text',
      )}::text[]) AS p(id, lo, hi)`);
  },

  /**
   * Notes the snapshot the partitions are about to be copied in (null: a new slot's own). Written
   * before the copy, so that whichever copy the sink ends up holding is noted with its snapshot.
   */
  stamp: (
    db: CommonQueryMethods,
    pipelineId: string,
    table: string,
    partitionIds: readonly string[],
    stamp: SnapshotStamp | undefined,
  ) =>
    db.query(sql.unsafe`UPDATE snapshot_partitions
      SET copied_in_visibility = ${stamp?.visibility ?? null}, copied_in_lsn = ${stamp ? formatLsn(stamp.lsn) : null}
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}
        AND partition_id = ANY(${sql.array(partitionIds, 'text')})`),

  markDone: (db: CommonQueryMethods, pipelineId: string, table: string, partitionId: string, rows: number) =>
    db.query(sql.unsafe`UPDATE snapshot_partitions SET rows_done = ${rows}, done_at = now()
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table} AND partition_id = ${partitionId}`),
};
