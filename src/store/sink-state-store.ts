import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { Checkpoint, TableRef } from '../core/change.js';
import { formatLsn, parseLsn } from '../core/lsn.js';
import { FencedError, type SinkStateStore, type SnapshotPartition } from '../core/sink.js';

const CheckpointRow = z.object({
  lsn: z.string(),
  epoch: z.number(),
  detail: z.record(z.unknown()),
});

const PartitionRow = z.object({ schema_name: z.string(), table_name: z.string(), partition_id: z.string() });

/** The sink bookkeeping of one pipeline, kept in the metadata store (`sink_checkpoints`, `sink_partitions_done`). */
export function sinkStateStore(pool: DatabasePool, pipelineId: string): SinkStateStore {
  return {
    readCheckpoint: async () => {
      const row = await pool.maybeOne(sql.type(CheckpointRow)`
        SELECT lsn::text AS lsn, epoch, detail FROM sink_checkpoints WHERE pipeline_id = ${pipelineId}`);
      return row ? { lsn: parseLsn(row.lsn), epoch: row.epoch, detail: row.detail } : null;
    },

    // One statement: the epoch check and the write cannot be split by another writer. The
    // position is the greater of the two, so a replayed batch never moves it back.
    writeCheckpoint: async (checkpoint: Checkpoint, detail: Record<string, unknown> = {}) => {
      const written = await pool.maybeOne(sql.type(z.object({ epoch: z.number() }))`
        INSERT INTO sink_checkpoints (pipeline_id, lsn, epoch, detail)
        VALUES (${pipelineId}, ${formatLsn(checkpoint.lsn)}::pg_lsn, ${checkpoint.epoch}, ${sql.jsonb(detail as never)})
        ON CONFLICT (pipeline_id) DO UPDATE SET
          lsn = GREATEST(sink_checkpoints.lsn, EXCLUDED.lsn),
          epoch = EXCLUDED.epoch,
          detail = EXCLUDED.detail,
          updated_at = now()
        WHERE sink_checkpoints.epoch <= EXCLUDED.epoch
        RETURNING epoch`);
      if (written) return;
      const stored = await pool.oneFirst(sql.type(z.object({ epoch: z.number() }))`
        SELECT epoch FROM sink_checkpoints WHERE pipeline_id = ${pipelineId}`);
      throw new FencedError(stored, checkpoint.epoch);
    },

    partitionsDone: async () => {
      const rows = await pool.any(sql.type(PartitionRow)`
        SELECT schema_name, table_name, partition_id FROM sink_partitions_done
        WHERE pipeline_id = ${pipelineId}`);
      return rows.map(
        (r): SnapshotPartition => ({
          table: { schema: r.schema_name, table: r.table_name },
          partitionId: r.partition_id,
        }),
      );
    },

    markPartitionDone: async ({ table, partitionId }: SnapshotPartition) => {
      await pool.query(sql.unsafe`
        INSERT INTO sink_partitions_done (pipeline_id, schema_name, table_name, partition_id)
        VALUES (${pipelineId}, ${table.schema}, ${table.table}, ${partitionId})
        ON CONFLICT DO NOTHING`);
    },

    forgetPartitions: async (table: TableRef) => {
      await pool.query(sql.unsafe`
        DELETE FROM sink_partitions_done
        WHERE pipeline_id = ${pipelineId} AND schema_name = ${table.schema} AND table_name = ${table.table}`);
    },
  };
}
