import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const PartitionRow = z.object({
  table_name: z.string(),
  partition_id: z.string(),
  lower_bound: z.string().nullable(),
  upper_bound: z.string().nullable(),
  rows_done: z.number().nullable(),
  done_at: z.string().nullable(),
});
export type PartitionRow = z.infer<typeof PartitionRow>;

export const snapshotPartitionsStore = {
  list: (db: CommonQueryMethods, pipelineId: string, table?: string) =>
    db.any(sql.type(
      PartitionRow,
    )`SELECT table_name, partition_id, lower_bound, upper_bound, rows_done, done_at
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

  markDone: (db: CommonQueryMethods, pipelineId: string, table: string, partitionId: string, rows: number) =>
    db.query(sql.unsafe`UPDATE snapshot_partitions SET rows_done = ${rows}, done_at = now()
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table} AND partition_id = ${partitionId}`),
};
