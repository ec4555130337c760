import type { ChangeEvent, TableRef } from './change.js';
import type { StreamVerdict } from './stream-verdict.js';

/**
 * A table's shape as the change stream announces it, before the first change in that shape. The
 * runtime reads its name; the source that sent it turns it into a `TableSchema`
 * (`Source.describeRelation`).
 */
export interface SourceRelation extends TableRef {
  /** The source's id of the table, stable while the table exists. */
  relationId: number;
  /** Columns in the order the stream's rows carry them. */
  columns: readonly SourceRelationColumn[];
}

export interface SourceRelationColumn {
  name: string;
  /** The source's id of the column's type. */
  typeOid: number;
  /** The type's modifier (a length, a precision), -1 when none. */
  typeMod: number;
  /** Part of the key the stream identifies updated and deleted rows by. */
  isKey: boolean;
}

/**
 * What a change stream yields, in commit order; a transaction's items are never interleaved with
 * another's. Positions are bigint (see `core/lsn.ts` for their text form).
 */
export type StreamItem =
  /**
   * `commitLsn`: where the transaction's commit record starts, when the source knows it at the
   * transaction's start (a stream from position P carries the transactions whose commit is at or
   * after P).
   */
  | { kind: 'begin'; xid: number; commitTimeMs: number; commitLsn?: bigint }
  | { kind: 'relation'; relation: SourceRelation }
  | { kind: 'change'; change: ChangeEvent }
  /** `endLsn`: the end of the commit record, the position to acknowledge once the transaction is durable. */
  | { kind: 'commit'; xid: number; endLsn: bigint }
  /** No transaction is open and the source has sent everything up to `walEnd`: safe to ack it when nothing is in flight. */
  | { kind: 'idle'; walEnd: bigint }
  | StreamedItem;

/**
 * Items of a transaction the source sends before its commit (a streamed one), given as it arrives
 * to a consumer that asked for them; one such transaction at a time, while every other item keeps
 * coming as above. They are tentative: the whole transaction still follows its `stream-commit`, in
 * the items above, unless the consumer's verdict says it delivered it.
 */
export type StreamedItem =
  /** A change of `xid`; `change.xid` is the (sub)transaction that made it; its commit fields are not known yet. */
  | { kind: 'stream-change'; xid: number; change: ChangeEvent }
  /** A table shape announced inside the streamed transaction, for its changes only. */
  | { kind: 'stream-relation'; xid: number; relation: SourceRelation }
  /** `xid` rolled back (`subxid === xid`), or only its subtransaction `subxid`. */
  | { kind: 'stream-abort'; xid: number; subxid: number }
  /**
   * `xid` committed at `endLsn`: the source waits for `verdict`, then replays the transaction
   * unless the consumer delivered it.
   */
  | { kind: 'stream-commit'; xid: number; endLsn: bigint; commitTimeMs: number; verdict: StreamVerdict };

/** Counters of a change stream, for diagnostics. */
export interface ChangeStreamStats {
  /** Transactions handed over whole. */
  transactions: number;
  /** Large transactions the source sent before their commit, held until it. */
  streamedTransactions: number;
  /** Streamed transactions too big for memory, spooled to disk. */
  spilledTransactions: number;
  /** Items waiting for the consumer. */
  queuedItems: number;
  /** Bytes of the messages those items came from (a replayed item's are estimated from its values). */
  queuedBytes: number;
  /**
   * When the oldest transaction not handed over whole yet began to arrive (ms since the epoch),
   * for one the source sends before its commit; once its commit is known and it is being handed
   * over, its commit time. Null when there is none.
   */
  arrivingSinceMs: number | null;
  /** Acknowledgements the source could not be told of: while none gets through, it keeps what is before them. */
  failedStatusUpdates: number;
}

/** The committed changes of a pipeline's tables, from a position on. */
export interface ChangeStream {
  /**
   * Every item that arrived since the last call, in order (waits while there is none); null once
   * closed. Rejects with SlotMissingError or SourceConnectionError (or an error of the source's
   * protocol), after the items that came before the failure.
   */
  next(): Promise<StreamItem[] | null>;
  /** Reports `lsn` (a commit end position, or an idle walEnd) as durably applied: the source may forget what is before it. */
  ack(lsn: bigint): void;
  /** Stops the stream, ends the items and releases what it holds. */
  close(): Promise<void>;
  stats(): ChangeStreamStats;
}
