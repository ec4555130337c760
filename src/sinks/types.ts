import type { Readable } from 'node:stream';
import type pg from 'pg';
import type { ChangeEvent, Checkpoint, TableRef, TableSchema } from '../core/change.js';
import type { SchemaChangeItem } from '../core/schema-diff.js';

/** Everything a sink instance needs to know about the pipeline it serves. */
export interface SinkContext {
  /** The pipeline's id (UUID): the key of its checkpoint and snapshot markers in the sink. */
  pipelineId: string;
  /** Settings to connect to the sink, secrets included. */
  connection: pg.ClientConfig;
  /** The validated sink properties. */
  properties: Record<string, string>;
}

/** A batch of whole source transactions, in commit order. */
export interface ChangeBatch {
  changes: ChangeEvent[];
  /** Commit end LSN of the last transaction in the batch: the checkpoint to store with it. */
  commitLsn: string;
  /** Fencing epoch of the writing worker; a sink whose stored epoch is higher refuses the batch. */
  epoch: number;
}

/** Identifies one snapshot partition of one table. */
export interface SnapshotPartition {
  table: TableRef;
  /** Stable id of the partition within its table, e.g. `0`, `1`, … */
  partitionId: string;
}

/**
 * The contract every sink implements. Positional and small: open, write, checkpoint, close. A
 * transactional sink makes each call atomic; a broker may be at-least-once and say so.
 */
export interface Sink {
  /** Connects and prepares: its bookkeeping (checkpoint, partition markers) and the target tables of `tables`. */
  open(tables: TableSchema[]): Promise<void>;
  /** The last durable checkpoint of this pipeline, or null when nothing was ever applied. */
  readCheckpoint(): Promise<Checkpoint | null>;
  /** Snapshot partitions already durably written (so a resumed snapshot skips them). */
  snapshotPartitionsDone(): Promise<SnapshotPartition[]>;
  /**
   * Empties the target of a table before its snapshot starts from scratch, and forgets its
   * partition markers (a fresh snapshot owns the target table's content).
   */
  resetTable(table: TableSchema): Promise<void>;
  /**
   * Writes one snapshot partition from a COPY text-format stream of the source table's columns
   * (in `table.columns` order), and marks the partition done atomically with the rows. Returns
   * the number of rows written.
   */
  writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number>;
  /** The statements that would bring a table's target from `current` to `proposed` (shown for review). */
  planSchemaChange(current: TableSchema, changes: readonly SchemaChangeItem[]): string[];
  /**
   * Runs an approved plan in one transaction; the table is written with `proposed` from then on.
   * A statement whose change the sink already has (made by hand) is skipped and returned.
   */
  applySchemaChange(proposed: TableSchema, statements: readonly string[]): Promise<{ skipped: string[] }>;
  /** Applies whole transactions and stores `batch.commitLsn` as the checkpoint, atomically. */
  applyBatch(batch: ChangeBatch): Promise<Checkpoint>;
  /** Releases connections; safe to call twice. */
  close(): Promise<void>;
}

/** Thrown by a sink whose stored fencing epoch is newer than the writer's: another worker owns the pipeline. */
export class FencedError extends Error {
  constructor(
    readonly storedEpoch: number,
    readonly writerEpoch: number,
  ) {
    super(`pipeline is owned by a newer worker (epoch ${storedEpoch} > ${writerEpoch})`);
    this.name = 'FencedError';
  }
}
