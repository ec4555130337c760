import { FencedError, type SinkStateStore, type SnapshotPartition } from '../../src/core/sink.js';

/**
 * A SinkStateStore in memory with the stored one's rules (the position never moves back, an older
 * epoch is fenced), for tests that drive a sink through its contract. Hand the same store to a
 * second sink to play a restart.
 */
export function memorySinkState(): SinkStateStore {
  let checkpoint: { lsn: bigint; epoch: number; detail: Record<string, unknown> } | null = null;
  let partitions: SnapshotPartition[] = [];
  return {
    readCheckpoint: async () => (checkpoint ? structuredClone(checkpoint) : null),
    writeCheckpoint: async ({ lsn, epoch }, detail = {}) => {
      if (checkpoint && checkpoint.epoch > epoch) throw new FencedError(checkpoint.epoch, epoch);
      const kept = checkpoint && checkpoint.lsn > lsn ? checkpoint.lsn : lsn;
      checkpoint = { lsn: kept, epoch, detail: structuredClone(detail) };
    },
    partitionsDone: async () => partitions.map((p) => ({ ...p })),
    markPartitionDone: async (partition) => {
      const known = partitions.some(
        (p) =>
          p.partitionId === partition.partitionId &&
          p.table.schema === partition.table.schema &&
          p.table.table === partition.table.table,
      );
      if (!known) partitions.push(partition);
    },
    forgetPartitions: async (table) => {
      partitions = partitions.filter((p) => p.table.schema !== table.schema || p.table.table !== table.table);
    },
  };
}
