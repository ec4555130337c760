import { availableParallelism } from 'node:os';

/** How a pipeline's snapshots are cut and copied. */
export interface SnapshotOptions {
  /** Partitions copied at once, each on its own source connection. */
  parallelism: number;
  /** Rows per partition, about: tables are split by key ranges of this size. */
  partitionRows: number;
}

/**
 * One copy connection per core of this machine, from 2 to 4: the copy is bound by the service's
 * and the databases' CPUs, and more connections than cores only contend (measured in bench/).
 * Partitions of 250k rows make progress visible and resumes cheap.
 */
export const DEFAULT_SNAPSHOT_OPTIONS: SnapshotOptions = {
  parallelism: Math.min(4, Math.max(2, availableParallelism())),
  partitionRows: 250_000,
};

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
