/** How a pipeline's snapshots are cut and copied. */
export interface SnapshotOptions {
  /** Partitions copied at once, each on its own source connection. */
  parallelism: number;
  /** Rows per partition, about: tables are split by key ranges of this size. */
  partitionRows: number;
}

/** Four connections keep a source and a sink busy without crowding either; partitions of 250k rows
 * make progress visible and resumes cheap. */
export const DEFAULT_SNAPSHOT_OPTIONS: SnapshotOptions = { parallelism: 4, partitionRows: 250_000 };

export const SNAPSHOT_LIMITS = {
  parallelism: { minimum: 1, maximum: 32 },
  partition_rows: { minimum: 1_000, maximum: 100_000_000 },
} as const;

/** The options as stored and shown (`{parallelism, partition_rows}`), defaults filled in. */
export interface SnapshotOptionsJson {
  parallelism?: number;
  partition_rows?: number;
}

export const resolveSnapshotOptions = (stored: SnapshotOptionsJson | undefined): SnapshotOptions => ({
  parallelism: stored?.parallelism ?? DEFAULT_SNAPSHOT_OPTIONS.parallelism,
  partitionRows: stored?.partition_rows ?? DEFAULT_SNAPSHOT_OPTIONS.partitionRows,
});
