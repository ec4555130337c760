import type { ChangeEvent } from './change.js';
import type { ChangeBatch } from './sink.js';

/**
 * One sink transaction held open while a streamed source transaction arrives, on a connection of
 * its own: its changes are written in pieces as they come and committed with the checkpoint at
 * the source transaction's commit. Until then it touches no bookkeeping (the checkpoint row stays
 * free for the batches of the transactions that commit meanwhile), and a crash loses it whole, to
 * be replayed from the source. Any failure leaves it unusable: the caller aborts it and falls back
 * to the source's replay.
 */
export interface HeldTransaction {
  /** Writes changes of the transaction, in order. */
  apply(changes: ChangeEvent[]): Promise<void>;
  /** Marks where subtransaction `subxid`'s changes begin. */
  savepoint(subxid: number): Promise<void>;
  /** Undoes everything since `subxid`'s mark (nothing when it has none, or an earlier undo took it). */
  rollbackTo(subxid: number): Promise<void>;
  /**
   * Stores `batch.commitLsn` as the checkpoint (with the fencing check of `applyBatch`; its
   * `changes` are empty) and commits; resolves once durable.
   */
  commit(batch: ChangeBatch): Promise<void>;
  /** Rolls back and releases the connection; never throws, safe to call twice. */
  abort(): Promise<void>;
}
