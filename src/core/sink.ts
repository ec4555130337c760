/**
 * The sink contract: what every sink implements, and all the runtime knows of a sink. It is made
 * for three shapes of sink alike:
 *
 * - a transactional SQL database (PostgreSQL, MySQL): a batch and its checkpoint are one
 *   transaction, so a crash replays at most what was not committed, and idempotent writes
 *   (upserts keyed by the primary key) make the replay converge;
 * - a columnar warehouse (DuckDB's appender, bulk files): a batch is appended in bulk and the
 *   checkpoint written in the same commit;
 * - a broker (publish, then wait for the acks): the batch is published and the checkpoint stored
 *   only once every message is acknowledged: at-least-once, with each message keyed by table,
 *   primary key and commit position so that consumers can drop a redelivered one.
 *
 * Changes arrive decoded (`ChangeEvent`), in commit order, in batches of whole source
 * transactions. Values travel in their canonical text form, lossless for every type, with the
 * column's type alongside (`ColumnSchema`); `typedValue` in `core/values.ts` turns them into typed
 * values (numbers, booleans, JSON, bytes, timestamps) for a sink that stores them natively, while a
 * SQL sink hands the text to its server, which parses it faster than JavaScript could.
 *
 * Adding a sink is one folder under `src/sinks/` exporting its `SinkKind`, and one line in
 * `src/sinks/registry.ts`.
 */

import type { Readable } from 'node:stream';
import type { ChangeEvent, Checkpoint, TableRef, TableSchema } from './change.js';
import type { CopyFormat } from './copy-binary.js';
import type { HeldTransaction } from './held-transaction.js';
import { formatLsn } from './lsn.js';
import type { PropertyDoc } from './property-docs.js';
import type { RetryAdvice, RetryClass } from './retry-advice.js';
import type { SchemaChangeItem } from './schema-diff.js';
import type { SinkComparison } from './table-comparison.js';

/** Everything a sink instance needs to know about the pipeline it serves. */
export interface SinkContext<Connection = unknown> {
  /** The pipeline's id (UUID): the key of its checkpoint and snapshot markers in the sink. */
  pipelineId: string;
  /** Settings to connect to the sink, secrets included, as its connection type defines them. */
  connection: Connection;
  /** The validated sink properties. */
  properties: Record<string, string>;
  /**
   * Durable bookkeeping the service keeps for this pipeline, for a sink that has no storage of its
   * own to keep its checkpoint and partition markers next to the data (a broker, a webhook).
   */
  state: SinkStateStore;
}

/** A stored checkpoint, with what the sink recorded of a transaction it delivered in part. */
export interface StoredSinkCheckpoint extends Checkpoint {
  /** The sink's own JSON progress note, `{}` when it wrote none. */
  detail: Record<string, unknown>;
}

/**
 * The service's store of one pipeline's sink bookkeeping. Writes are durable when they resolve.
 * The checkpoint never moves back, and a writer whose epoch is older than the stored one is
 * refused with FencedError, as a database sink fences in its own table.
 */
export interface SinkStateStore {
  readCheckpoint(): Promise<StoredSinkCheckpoint | null>;
  writeCheckpoint(checkpoint: Checkpoint, detail?: Record<string, unknown>): Promise<void>;
  partitionsDone(): Promise<SnapshotPartition[]>;
  markPartitionDone(partition: SnapshotPartition): Promise<void>;
  /** Forgets the partition markers of a table whose snapshot starts again. */
  forgetPartitions(table: TableRef): Promise<void>;
}

/** How the runtime cuts the change stream into batches for a sink; every sink's parsed properties carry them. */
export interface BatchLimits {
  /** Most change events in one batch. */
  maxEvents: number;
  /** Most bytes of change data in one batch. */
  maxBytes: number;
  /** Longest wait, in milliseconds, for a batch to fill before it is written anyway. */
  maxWaitMs: number;
}

/** The parsed properties of any sink. */
export interface SinkProperties {
  batch: BatchLimits;
}

/** One kind of sink: how to validate its properties and how to make an instance. */
export interface SinkKind<P extends SinkProperties = SinkProperties, Connection = unknown> {
  /** The connection type it writes to. */
  type: string;
  /** Its `sink.properties`, documented: the OpenAPI document and docs/sinks/ show them. */
  properties: readonly PropertyDoc[];
  /** Validates the `sink.properties` of a pipeline; throws a 422 AppError on `sink.properties.<key>`. */
  parseProperties(props: Record<string, string>): P;
  /** A new, unopened sink. */
  create(ctx: SinkContext<Connection>): Sink;
  /**
   * The tables a SQL sink writes `tables` to, so that a sink on the source's own database can be
   * refused before it overwrites a source table. Absent for sinks that write no tables.
   */
  targetTables?(props: Record<string, string>, tables: readonly TableRef[]): TableRef[];
  /**
   * The tables a SQL sink writes `tables` to in the database of its connection (`publicDsn`, the
   * default database of some), so that two pipelines writing one table can be refused. Absent for
   * sinks that write no tables.
   */
  writtenTables?(props: Record<string, string>, tables: readonly TableRef[], publicDsn: string): TableRef[];
  /** Set when its sinks implement `comparison()`: a pipeline into it can be verified against its source. */
  comparable?: boolean;
  /** Refuses (422) properties that cannot run with these source tables. */
  checkTables?(props: Record<string, string>, tables: readonly TableRef[]): void;
  /** Refuses (422) tables the sink could not take, asking the sink itself; an unreachable sink passes. */
  preflight?(
    connection: Connection,
    props: Record<string, string>,
    tables: readonly TableSchema[],
    connectTimeoutMs: number,
  ): Promise<void>;
  /**
   * How a failure its driver raised, passed on as it came (a session killed, a server shutting
   * down), may heal; undefined for an error it does not know. Errors the sink builds itself carry
   * their advice (`RetryAdvice`) instead.
   */
  retryAdvice?(error: unknown): RetryAdvice | undefined;
}

/** A batch of whole source transactions, in commit order. */
export interface ChangeBatch {
  changes: ChangeEvent[];
  /**
   * Commit end position (LSN) of the last transaction in the batch: the checkpoint to store with
   * it. A transaction too large for one batch comes in several, each under the checkpoint before
   * it, so that a crash in between replays it whole.
   */
  commitLsn: bigint;
  /** Fencing epoch of the writing worker; a sink whose stored epoch is higher refuses the batch. */
  epoch: number;
}

/** Identifies one snapshot partition of one table. */
export interface SnapshotPartition {
  table: TableRef;
  /** Stable id of the partition within its table, e.g. `0`, `1`, … */
  partitionId: string;
}

/** What a SQL sink finds of the target of a table it copied, to tell whether it changed behind its back. */
export interface TargetState {
  /** The source table. */
  table: TableRef;
  /** Its target in the sink. */
  target: TableRef;
  /** Whether the target table exists. */
  exists: boolean;
  /** The columns of the table's shape the target no longer has (none when it does not exist). */
  missingColumns: string[];
  /** Whether it holds no row at all (false when it does not exist). */
  empty: boolean;
}

/**
 * The contract every sink implements. Positional and small: open, write, checkpoint, close. A
 * transactional sink makes each call atomic; a broker may be at-least-once and say so.
 */
export interface Sink {
  /**
   * What the sink's tables of `tables` (with the shapes they were written with) look like now,
   * read without creating or changing anything, before `open`. Only sinks that write tables
   * implement it: a message sink cannot look at what its consumers did with the messages.
   */
  inspectTargets?(tables: readonly TableSchema[]): Promise<TargetState[]>;
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
   * The bulk-load path: writes one snapshot partition, and marks it done atomically with the rows
   * (or, for a broker, once they are acknowledged). The rows come as a COPY text-format stream of
   * the source table's columns (in `table.columns` order): a sink that loads COPY takes it as it
   * is, any other reads typed rows from it with `copyTextRows` (`core/copy-text.ts`) and loads
   * them its own fastest way. Returns the number of rows written. The caller owns the stream: it
   * listens for its errors until the call settles and destroys it when the call fails. The stream
   * is binary COPY in the protocol's CopyData messages instead (`core/copy-binary.ts`), each chunk
   * whole messages, when `snapshotCopyFormat` asked for it (`format` says so).
   */
  writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
    format?: CopyFormat,
  ): Promise<number>;
  /**
   * The COPY format the sink takes `table`'s partitions in, once open; text when absent. Binary
   * only for a sink that loads PostgreSQL's binary COPY as it is, into columns of the very types
   * of the source's: no value is printed and parsed again on the way.
   */
  snapshotCopyFormat?(table: TableSchema): CopyFormat;
  /**
   * Every partition of `table` is written: a sink that left work for the end of the copy (an index
   * built once, sorted, rather than row by row) does it now. Called before the table streams; a
   * sink must also cope with a batch for a table whose snapshot was never declared finished.
   */
  finishSnapshot(table: TableRef): Promise<void>;
  /** The statements that would bring a table's target from `current` to `proposed` (shown for review). */
  planSchemaChange(current: TableSchema, changes: readonly SchemaChangeItem[]): string[];
  /**
   * Runs an approved plan in one transaction; the table is written with `proposed` from then on.
   * A statement whose change the sink already has (made by hand) is skipped and returned.
   */
  applySchemaChange(proposed: TableSchema, statements: readonly string[]): Promise<{ skipped: string[] }>;
  /**
   * Applies whole transactions and stores `batch.commitLsn` as the checkpoint: atomically for a
   * transactional sink, after the acknowledgements for a broker. Resolves once both are durable;
   * only then does the source acknowledge the position. Throws FencedError when a newer worker
   * owns the pipeline.
   */
  applyBatch(batch: ChangeBatch): Promise<void>;
  /**
   * A transaction held open for a streamed source transaction, written while it arrives (see
   * `core/held-transaction.ts`); only a transactional sink with a connection to spare has it.
   */
  openHeldTransaction?(): Promise<HeldTransaction>;
  /**
   * How to read the sink's tables to verify them against the source (`core/table-comparison.ts`);
   * absent for a sink that cannot be read back (a broker, a webhook). Called on an open sink.
   */
  comparison?(): Promise<SinkComparison>;
  /** Releases connections; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Thrown by a sink, in a batch's transaction and before it writes anything, when its stored
 * checkpoint already holds the batch's first transaction: the last batch of a worker that lost
 * the pipeline committed after this worker read the checkpoint. Applied, the batch would take
 * rows back to older versions and the checkpoint backwards; retried, the data plane starts again
 * from the checkpoint.
 */
export class CheckpointAheadError extends Error {
  constructor(
    readonly stored: bigint,
    readonly batchFrom: bigint,
  ) {
    super(
      `the sink's checkpoint ${formatLsn(stored)} already holds this batch (from ${formatLsn(batchFrom)}): another worker's last batch committed meanwhile; starting again from the checkpoint`,
    );
    this.name = 'CheckpointAheadError';
  }
}

/**
 * Throws CheckpointAheadError when a worker's first batch on a pipeline (its epoch newer than the
 * stored one) starts before the checkpoint its predecessor left: that one's last batch committed
 * after this worker read the checkpoint. Later batches of the same worker may rightly start
 * before it (a backfill's held changes are written under the position acknowledged since).
 * `stored` is the checkpoint row as locked by the caller, absent when there is none.
 */
export function refuseBatchBehind(
  stored: { lsn: bigint | null; epoch: number } | undefined,
  batch: ChangeBatch,
): void {
  if (!stored || stored.lsn === null || stored.epoch >= batch.epoch) return;
  const at = stored.lsn;
  // A change carries its commit record's start, which a checkpoint (a commit's end) lies after.
  const from = batch.changes[0]?.commitLsn ?? batch.commitLsn;
  if (batch.commitLsn < at || from < at) throw new CheckpointAheadError(at, from);
}

/** Thrown by a sink whose stored fencing epoch is newer than the writer's: another worker owns the pipeline. */
export class FencedError extends Error implements RetryAdvice {
  /** A newer worker owns the pipeline: this one must not write again. */
  readonly retry: RetryClass = 'never';

  constructor(
    readonly storedEpoch: number,
    readonly writerEpoch: number,
  ) {
    super(`pipeline is owned by a newer worker (epoch ${storedEpoch} > ${writerEpoch})`);
    this.name = 'FencedError';
  }
}
