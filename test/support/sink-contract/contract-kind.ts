import type { Row, TableSchema } from '../../../src/core/change.js';
import type { Sink } from '../../../src/core/sink.js';

/**
 * What a kind of sink may be unable to do. A kind that cannot names the reason in its entry, and
 * the contract cases that need it are skipped with that reason.
 */
export interface ContractLimits {
  /** It cannot take a snapshot partition written again before its table's snapshot is finished. */
  rewritesDonePartition?: string;
  /** It sends messages, which a reset cannot take back from their consumers. */
  emptiesTargetOnReset?: string;
  /** What it wrote cannot be changed by a later schema change (a message keeps the shape it was sent in). */
  reshapesWrittenRows?: string;
  /** It writes rows, not messages: there is no message id to read. */
  messageIds?: string;
  /** It cannot be read back for verification (`Sink.comparison`). */
  comparison?: string;
}

/**
 * One kind of sink under the sink contract: how to make its sinks and read back what they wrote.
 * A new sink kind is one such entry, listed in `index.ts`.
 */
export interface ContractKind {
  /** The kind's name in the suite's titles. */
  name: string;
  /** What the kind cannot do, each with the reason. */
  cannot: ContractLimits;
  /** Connects to what the kind writes to, once for the whole file. */
  start(): Promise<ContractServer>;
}

/** A kind's server, as the contract suite uses it. */
export interface ContractServer {
  /** A fresh pipeline: its own targets and its own bookkeeping. */
  pipeline(): Promise<ContractPipeline>;
  /** Drops what the pipelines made and closes the connections. */
  stop(): Promise<void>;
}

/** One pipeline writing to the kind's server. */
export interface ContractPipeline {
  /**
   * A new sink of this pipeline, opened on `tables`: another worker, or the same one after a
   * restart. Every sink of a pipeline shares its bookkeeping (checkpoint, partition markers).
   * The suite closes it.
   */
  open(tables: TableSchema[]): Promise<Sink>;
  /**
   * What a reader of the sink holds of `table` now, normalised so that one expectation fits every
   * kind: the rows by key (for a broker, its messages folded by key as a consumer would), every
   * value in PostgreSQL's text form (or null), in key order, with the columns of `table`.
   */
  rows(table: TableSchema): Promise<Row[]>;
  /** The id of every message of `table`, in the order consumers get them (absent: `cannot.messageIds`). */
  messageIds?(table: TableSchema): Promise<string[]>;
}
