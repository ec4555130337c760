/**
 * The source contract: all the runtime knows of a source database. A source describes the tables
 * a pipeline names, copies them in a snapshot consistent with a position, and streams their
 * committed changes from a position on, which it forgets only once told they are durable. What
 * it needs for that at the source database (for PostgreSQL, a publication and a logical
 * replication slot) is owned by the pipeline, named from its id.
 *
 * Positions are bigint in the runtime (`core/lsn.ts` gives their text form, which the store and
 * the sinks keep). Adding a source is one folder under `src/source/` exporting its `SourceKind`,
 * and one line in `src/source/registry.ts`.
 */
import type { Readable } from 'node:stream';
import type { ColumnValue, Row, TableRef, TableSchema } from './change.js';
import type { ChangeStream, SourceRelation } from './change-stream.js';
import type { CopyFormat } from './copy-binary.js';
import type { SourceComparison } from './table-comparison.js';

/** Pino-compatible logger subset. */
export interface SourceLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** One kind of source: the connection type it reads, and how to make an instance. */
export interface SourceKind<Connection = unknown> {
  /** The connection type it reads from. */
  type: string;
  /** A new, unconnected source reading the database `connection` points at. */
  create(connection: Connection, options?: SourceOptions): Source;
}

/** How a pipeline's definition shapes its source. */
export interface SourceOptions {
  /**
   * The changes feed the user made at the source (for PostgreSQL, a publication) and names in the
   * definition: the source reads it and checks it carries the tables, and never alters or drops it.
   * Unset: the source creates and owns one named from the pipeline's id.
   */
  publication?: string;
  /**
   * The name of the shared stream the pipeline reads (lowercase letters, digits and underscores,
   * at most 40 characters): the source's slot and changes feed are the stream's, shared by every
   * pipeline of the stream, instead of ones named from the pipeline's id. `dropOwned` then drops
   * the stream's, which only the last pipeline of the stream may ask for.
   */
  stream?: string;
}

/** What a pipeline leaves at its source until it is deleted, named for a person. */
export interface OwnedObjects {
  /** The replication slot's name, which holds the source's WAL until it is dropped. */
  slot: string;
  /** E.g. `replication slot 'replicator_…'`. */
  what: string;
  /** The statement that drops it by hand. */
  dropByHand: string;
}

/** A table of the source as offered for a pipeline. */
export interface SourceTable {
  table: TableRef;
  replicable: boolean;
  /** Why it cannot be replicated and what to do about it; null when it can. */
  reason: string | null;
  /** The source's estimate of its rows (0 when it has none). */
  estimatedRows: number;
}

/** One condition for the source to serve replication, met or not, as a connection test lists it. */
export interface ReadinessCheck {
  /** What is checked, e.g. `wal_level`. */
  name: string;
  ok: boolean;
  /** What was found, in words. */
  found: string;
  /** When not met: the problem and its remedy. */
  problem: string;
  /**
   * Whether a pipeline cannot start at all while it is not met (checkReady refuses it); slots
   * and senders all in use only make a start wait and retry.
   */
  refusesStart: boolean;
}

/** Where a change stream starts, and how it runs. */
export interface StreamOptions {
  from: bigint;
  logger?: SourceLogger;
  spoolDir?: string;
  live?: boolean;
  /** How often the position is reported when nothing else reports it. */
  statusIntervalMs?: number;
  /**
   * Whether `from` counts as acknowledged once the stream starts (the default: it is the
   * consumer's durable position). False for a stream shared by consumers of whom some need what
   * is before it: only ack() lets the source forget.
   */
  acknowledgeFrom?: boolean;
}

/**
 * One source database, through one session opened by connect(). Every other call but
 * exportSnapshot() and startStream(), which open their own connections, needs it.
 */
export interface Source {
  /** Opens the session; rejects with the driver's error (an unreachable server, a refused login). */
  connect(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Each condition for the source to serve replication to the connected role, met or not: what
   * checkReady judges, and more (free slots, the right to connect), for a person to read.
   */
  readiness(): Promise<ReadinessCheck[]>;
  /**
   * Checks that the source can serve replication to the connected role.
   * @throws SourceNotReadyError listing every problem with what to do about it.
   */
  checkReady(): Promise<void>;
  /**
   * Checks that the connected role holds every privilege a pipeline over `tables` needs (reading
   * them, and making or reading its changes feed); `pipelineId` when the pipeline exists.
   * @throws SourceNotReadyError naming each missing privilege and the statement that grants it.
   */
  checkAccess(tables: readonly TableRef[], pipelineId?: string): Promise<void>;
  /**
   * The schema of each table, in the order given.
   * @throws TableNotReplicableError naming every table that cannot be replicated and why.
   */
  describeTables(tables: readonly TableRef[]): Promise<TableSchema[]>;
  /** Every table the connected role can see, each said replicable or not (and why), for choosing. */
  listTables(): Promise<SourceTable[]>;
  /**
   * Which server and database the session reads: equal for two sessions on the same data (a
   * standby counts as its primary); undefined when the source cannot tell.
   */
  identity(): Promise<string | undefined>;

  /**
   * The tables of `tables` the pipeline's changes feed no longer carries because they are gone
   * from the source under their name (dropped, renamed, or dropped and created again), each with
   * why. A source sends nothing when a table is dropped: this is how the runtime finds out.
   */
  goneTables(pipelineId: string, tables: readonly TableRef[]): Promise<GoneTable[]>;
  /** The tables of `tables` that hold at least one row now. */
  tablesWithRows(tables: readonly TableRef[]): Promise<TableRef[]>;
  /**
   * Makes the pipeline's changes feed carry exactly `tables`, creating it if needed; a feed the
   * user made is only checked to carry them (SourceNotReadyError saying what it lacks).
   */
  publish(pipelineId: string, tables: readonly TableRef[]): Promise<void>;
  /**
   * Readies the pipeline's slot for streaming: ends another reader still streaming from it, or
   * creates it (with a snapshot consistent with it) when `mayCreate`, which only a pipeline that
   * never streamed may do: a slot recreated later would skip changes.
   * @throws SlotMissingError when the slot is gone (and may not be created) or invalidated.
   */
  claimSlot(pipelineId: string, options: { mayCreate: boolean; logger: SourceLogger }): Promise<SlotClaim>;
  /**
   * The state of the pipeline's slot.
   * @throws SlotMissingError when it is gone or invalidated: the pipeline cannot go on.
   */
  slotStatus(pipelineId: string): Promise<SlotStatus>;
  /**
   * Where the source's durable WAL ends now (a standby: what it replayed). A stream whose idle
   * position reaches it has sent every change committed before this call.
   */
  walPosition(): Promise<bigint>;
  /**
   * Where the source's WAL ends now (as `walPosition`) and where the slots of `pipelineIds` stand,
   * read together in one statement: how far each pipeline is behind, whatever its state.
   */
  positions(pipelineIds: readonly string[]): Promise<SourcePositions>;
  /**
   * Streams the pipeline's changes committed after `from` (0n: from where the slot stands).
   * Nothing is acknowledged unless `ack()` is called. `spoolDir`: where a transaction too large
   * for memory is kept while it arrives (the OS temp directory when unset). `live`: a source that
   * can also hands over a large transaction as it arrives (`StreamedItem`), for a sink that can
   * hold it open.
   */
  startStream(pipelineId: string, options: StreamOptions): ChangeStream;
  /**
   * Drops what the pipeline owns at the source, if it exists, ending a reader still streaming; a
   * feed the user made is theirs, and kept.
   */
  dropOwned(pipelineId: string): Promise<void>;
  /** What the pipeline owns at the source, and how a person drops it by hand; needs no connection. */
  ownedObjects(pipelineId: string): OwnedObjects;

  /** A snapshot of the source as it is now, held until released. */
  exportSnapshot(): Promise<SourceSnapshot>;
  /** How the source reads its tables to compare them with a sink's (verification); needs no connection. */
  comparison(): SourceComparison;

  /**
   * The schema of a table as a relation item of this source's stream announced it; null when the
   * table is gone from the source (dropped after the changes that follow the item were made).
   */
  describeRelation(relation: SourceRelation): Promise<TableSchema | null>;
  /**
   * The value the rows already in the table have for each of `columns` (just added): text, or
   * null when they have none. A column is left out when that is unknown (each row got its own
   * value, from a volatile default).
   */
  existingValues(relation: SourceRelation, columns: readonly string[]): Promise<Map<string, ColumnValue>>;

  /** Ends the session; safe to call twice, and without connect(). */
  close(): Promise<void>;
}

/** A table of a pipeline no longer at the source under its name. */
export interface GoneTable {
  table: TableRef;
  /** Why, for a person: e.g. `does not exist at the source any more (dropped, or renamed)`. */
  reason: string;
}

/** What claimSlot() found or made. */
export interface SlotClaim {
  /**
   * Where the slot stands: a new slot's consistent point, else its confirmed position (0n when it
   * has none). The stream starts here when the sink holds no checkpoint.
   */
  position: bigint;
  /** Set when the slot was just created: a snapshot whose content is everything before `position`. */
  snapshot?: SourceSnapshot;
}

/** The source's WAL end and its pipelines' slots at one moment (see Source.positions). */
export interface SourcePositions {
  walEnd: bigint;
  /** By pipeline id; a pipeline without a slot is absent. */
  slots: Map<string, SlotPosition>;
}

/** Where a slot stands. */
export interface SlotPosition extends SlotStatus {
  /** What the pipeline acknowledged: the source keeps every change after it for the pipeline. */
  confirmedLsn: bigint | null;
}

/** How much a slot makes the source keep. */
export interface SlotStatus {
  /** Change log the source keeps for the slot, in bytes; null when unknown. */
  retainedWalBytes: number | null;
  /** The source's word for how safe that is (PostgreSQL: `reserved`, `extended`, `unreserved`); null when unknown. */
  walStatus: string | null;
}

/**
 * Where an exported snapshot stands against the change stream: which transactions it sees
 * (`txid_current_snapshot()` text, see SnapshotVisibility), and a source position at or after the
 * commit of every one of them, past which nothing the stream carries is in the snapshot.
 */
export interface SnapshotStamp {
  visibility: string;
  lsn: bigint;
}

/** One consistent view of the source's tables, shared by the sessions that copy them. */
export interface SourceSnapshot {
  /**
   * Set for a snapshot exported while a slot already exists, whose stream then replays changes
   * the copy holds; absent for a new slot's snapshot, which sees nothing that slot streams.
   */
  stamp?: SnapshotStamp;
  /** A session reading in the snapshot; each worker that copies opens its own. */
  openReader(): Promise<SnapshotReader>;
  /** Lets the snapshot go: no reader can be opened in it after. Safe to call twice. */
  release(): Promise<void>;
}

/** One session reading inside a snapshot. */
export interface SnapshotReader {
  /** Splits a table into partitions to copy, about `targetRows` rows each. */
  planPartitions(
    table: TableSchema,
    options: { targetRows: number; maxPartitions: number },
  ): Promise<PartitionPlan>;
  /** Which transactions the snapshot sees, to split the change stream around it. */
  visibility(): Promise<TransactionVisibility>;
  /**
   * The rows of one partition in COPY text format (or binary in CopyData messages, see
   * `core/copy-binary.ts`, for a sink that asks for it), the
   * columns in `table.columns` order: what a sink's `writeSnapshotPartition` takes. One copy at a
   * time per reader.
   */
  copyPartition(table: TableSchema, partition: PlannedPartition, format?: CopyFormat): Readable;
  /** The rows of `keys` (each the key's values as source text) the snapshot holds, by column name. */
  readRows(table: TableSchema, keys: readonly string[][]): Promise<Row[]>;
  /** Ends the session; safe to call twice. */
  close(): Promise<void>;
}

/**
 * A key range of one table: rows with lower <= key < upper (a null bound is open). The bounds are
 * the source's text for key values: the store keeps them so that a resumed snapshot copies the
 * same ranges.
 */
export interface PlannedPartition {
  partitionId: string;
  lower: string | null;
  upper: string | null;
}

export interface PartitionPlan {
  /** From the source's statistics, or counted when it has none. */
  rowsEstimate: number;
  partitions: PlannedPartition[];
}

/** Which committed transactions a snapshot sees. */
export interface TransactionVisibility {
  /** Whether the committed transaction `xid` (as a `ChangeEvent` carries it) is in the snapshot. */
  sees(xid: number): boolean;
}
