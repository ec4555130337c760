import { type ChangeEvent, type TableRef, tableKey } from '../core/change.js';
import type { StreamItem } from '../core/change-stream.js';
import { formatLsn } from '../core/lsn.js';
import type { Sink } from '../core/sink.js';
import type { Logger } from '../log/logger.js';
import type { BatchLimits } from '../sinks/registry.js';
import type { BackfillCoordinator } from './backfill/backfill-coordinator.js';
import { nextOrWake, onAbort, type WakeSource } from './next-or-wake.js';
import { PendingCommits } from './pending-commits.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { SchemaGuard } from './schema-guard.js';
import type { CopyGate } from './snapshot/copy-gate.js';

export interface StreamApplierOptions {
  /** Every item that arrived since the last call, in order; null when the stream ended. */
  next(): Promise<StreamItem[] | null>;
  ack(lsn: bigint): void;
  sink: Sink;
  limits: BatchLimits;
  epoch: number;
  /** The durable position the stream starts after (the sink's checkpoint or the slot's start). */
  startLsn: bigint;
  /**
   * A source position at or past every change committed before the stream started: an idle
   * position that reaches it means the stream caught up, and nothing of before is left to apply.
   */
  caughtUpAt?: bigint;
  /** `schema.table` of the tables to apply; changes of others (just removed) are skipped. */
  tables: ReadonlySet<string>;
  stats: PipelineStats;
  signal: AbortSignal;
  logger: Logger;
  /** Called after every durable batch, for the store. */
  onApplied?(events: number, checkpointLsn: string): void;
  /** Tables being copied again while the others stream. */
  backfill?: BackfillCoordinator;
  /** What the copies already hold, not to be applied again. */
  copyGate?: CopyGate;
  /** Copies a table again (a backfill), for a change no copy of it can take as it is. */
  copyAgain?(table: TableRef): void;
  /** Watches table shapes announced by the stream. */
  schema?: SchemaGuard;
}

/** How the stream ended: told to stop (or the source ended it), or held for a schema review. */
export type ApplyOutcome = 'stopped' | 'held-for-schema';

/** A truncate of several tables as one event per table, so that each can be routed alone. */
function perTable(change: ChangeEvent): ChangeEvent[] {
  if (change.op !== 'truncate' || !change.tables || change.tables.length < 2) return [change];
  return change.tables.map((table) => ({ ...change, table, tables: [table] }));
}

// Measured for every change: no array is made for it.
const rowBytes = (row: ChangeEvent['after']) => {
  let bytes = 0;
  if (row) {
    for (const column in row) {
      const v = row[column];
      bytes += v === null || v === undefined ? 1 : v.length;
    }
  }
  return bytes;
};
const valueBytes = (change: ChangeEvent) =>
  64 + rowBytes(change.after) + rowBytes(change.key) + rowBytes(change.before);

/**
 * Applies the change stream to the sink in batches of whole transactions, each batch with its
 * checkpoint in one sink transaction, and acknowledges to the source only what is durable. The
 * sink writes one batch while the next gathers: a batch is written as soon as the sink is free
 * and a transaction has committed, so a light stream is written a transaction at a time (its lag
 * is one sink commit) while under load each batch holds what arrived during the previous write.
 * A transaction larger than a batch is applied in pieces under the previous checkpoint: a crash
 * in between replays it whole, and the sink's idempotent writes converge. Its pieces' events are
 * counted when its commit is durable, so that the replay does not count them twice.
 */
export async function applyStream(options: StreamApplierOptions): Promise<ApplyOutcome> {
  const { sink, stats, limits, signal } = options;
  let durableLsn = options.startLsn;
  let batch: ChangeEvent[] = [];
  let batchBytes = 0;
  let committedCount = 0; // changes of `batch` whose transaction has committed
  let committedLsn: bigint | null = null;
  let txOpen = false;
  let batchStartedAt = 0;
  // The sink write under way, if any, and a position past it to acknowledge once it is durable.
  let writing: Promise<void> | null = null;
  let writeFailed: { error: unknown } | null = null;
  let ackAfterWrite: bigint | null = null;
  const commits = new PendingCommits((oldestMs) => {
    stats.oldestPendingCommitMs = oldestMs;
  });
  // Pieces of the open transaction written and not counted yet; once it commits, the position
  // whose write makes it durable, and with it their count.
  let piecesHeld = false;
  let piecesCountAt: bigint | null = null;
  // Pieces of an earlier run, if it stopped mid-transaction, are replayed whole.
  stats.dropPieces();

  /** Writes changes with the checkpoint `position`; a piece of the open transaction with `piece`. */
  const apply = async (changes: ChangeEvent[], position: bigint, piece = false) => {
    const started = performance.now();
    const checkpointLsn = formatLsn(position);
    try {
      await sink.applyBatch({ changes, commitLsn: checkpointLsn, epoch: options.epoch });
    } catch (error) {
      stats.recordSinkError();
      throw error;
    }
    const seconds = (performance.now() - started) / 1000;
    if (piece) {
      stats.recordPiece(changes, seconds);
      piecesHeld = true;
      return;
    }
    stats.recordApplied(changes, checkpointLsn, seconds);
    if (piecesCountAt !== null && position >= piecesCountAt) countPieces();
    options.onApplied?.(changes.length, checkpointLsn);
  };

  const countPieces = () => {
    stats.countPieces();
    piecesHeld = false;
    piecesCountAt = null;
  };

  /** Whether the batch holds a batch's worth (`times` over: the bound of what waits for a write). */
  const full = (times = 1) =>
    batch.length >= limits.maxEvents * times || batchBytes >= limits.maxBytes * times;

  const resetBatchFigures = () => {
    batchBytes = batch.reduce((sum, c) => sum + valueBytes(c), 0);
    if (batch.length === 0) batchStartedAt = 0;
  };

  /** Takes the committed transactions out of the batch, for one sink write. */
  const takeCommitted = (): [ChangeEvent[], bigint] | null => {
    if (committedCount === 0 || committedLsn === null) return null;
    const taken: [ChangeEvent[], bigint] = [batch.slice(0, committedCount), committedLsn];
    batch = batch.slice(committedCount);
    committedCount = 0;
    committedLsn = null;
    resetBatchFigures();
    commits.writeStarted();
    return taken;
  };

  const acknowledge = (lsn: bigint) => {
    if (lsn <= durableLsn) return;
    durableLsn = lsn;
    options.ack(lsn);
  };

  /** Waits for the write under way; its failure is the applier's. */
  const settle = async () => {
    if (writing) await writing;
    if (writeFailed) throw writeFailed.error;
  };

  /** Starts writing the committed transactions, unless the sink is busy or the batch still gathers. */
  const startWrite = () => {
    if (writing || writeFailed || committedCount === 0) return;
    if (!full() && limits.maxWaitMs > 0 && Date.now() < batchStartedAt + limits.maxWaitMs) return;
    const taken = takeCommitted();
    if (!taken) return;
    const [changes, lsn] = taken;
    writing = (async () => {
      await apply(changes, lsn);
      acknowledge(lsn);
      // A position noted during the write lies after everything written and before anything gathered since.
      if (ackAfterWrite !== null) acknowledge(ackAfterWrite);
      ackAfterWrite = null;
    })()
      .catch((error: unknown) => {
        writeFailed = { error };
      })
      .finally(() => {
        writing = null;
        commits.writeEnded();
        wakeAll();
      });
  };

  /** Makes everything committed durable now; with `partial`, also the open transaction's changes so far. */
  const flush = async (partial: boolean) => {
    await settle();
    const taken = takeCommitted();
    if (taken) {
      await apply(...taken);
      commits.writeEnded();
      acknowledge(taken[1]);
    }
    if (partial && batch.length > 0) {
      await apply(batch, durableLsn, true);
      batch = [];
    }
    resetBatchFigures();
  };

  const { backfill } = options;
  /** Lets the backfill start or finish, between two batches. */
  const backfillTurn = async () => {
    if (!backfill?.needsTurn) return;
    await settle();
    // Changes of a table that just started a backfill, still waiting in the batch, come from
    // transactions its snapshot will see: the copy carries them, so they are dropped here (a
    // repair of rows keeps them, to apply before its rows).
    const committed = backfill.keepInBatch(batch.slice(0, committedCount));
    const rest = backfill.keepInBatch(batch.slice(committedCount));
    batch = [...committed, ...rest];
    committedCount = committed.length;
    await backfill.turn((changes) => apply(changes, durableLsn));
  };

  let pending: Promise<StreamItem[] | null> | null = null;
  // One wake-up list for everything that may interrupt the wait for the next items: the abort, a
  // backfill with work, the end of a sink write, and a gathering batch's deadline. Each is armed
  // once, not once per wait.
  const listeners = new Set<() => void>();
  function wakeAll() {
    for (const listener of [...listeners]) listener();
  }
  const wake: WakeSource = (listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };
  const offAbort = onAbort(signal)(wakeAll);
  const offBackfill = backfill?.onWake(wakeAll);
  let deadline: NodeJS.Timeout | undefined;
  const disarm = () => {
    clearTimeout(deadline);
    deadline = undefined;
  };

  /** Adds a change to the batch, unless it is not the sink's to apply. */
  const gather = (split: ChangeEvent) => {
    const change = options.schema ? options.schema.project(split) : split;
    if (!options.tables.has(tableKey(change.table))) return;
    if (backfill?.claims(change)) {
      if (backfill.route(change) !== 'apply') return;
    } else if (options.copyGate?.active) {
      const route = options.copyGate.route(change);
      if (route === 'copy-again') options.copyAgain?.(change.table);
      if (route !== 'apply') return;
    }
    if (batch.length === 0) batchStartedAt = Date.now();
    batch.push(change);
    batchBytes += valueBytes(change);
  };

  /** Takes in one item; 'hold' when a schema review stops the stream before it. */
  const take = async (item: StreamItem): Promise<'hold' | undefined> => {
    switch (item.kind) {
      case 'begin':
        txOpen = true;
        commits.begin(item.commitTimeMs);
        return;
      case 'change': {
        // Only a truncate of several tables is split: no array is made for the other changes.
        if (item.change.op === 'truncate') for (const split of perTable(item.change)) gather(split);
        else gather(item.change);
        // One transaction larger than a batch is written in pieces: the first once it holds twice
        // a batch (a transaction up to that stays whole), the next ones at a batch each, so that
        // no more of it than that is held while the sink writes.
        const times = piecesHeld ? 1 : 2;
        if (
          batch.length - committedCount >= limits.maxEvents * times ||
          batchBytes >= limits.maxBytes * times
        ) {
          await flush(true);
        }
        return;
      }
      case 'commit':
        txOpen = false;
        commits.committed(batch.length > committedCount);
        if (batch.length > committedCount) {
          committedCount = batch.length;
          committedLsn = item.endLsn;
          if (batchStartedAt === 0) batchStartedAt = Date.now();
          if (piecesHeld) piecesCountAt = item.endLsn;
        } else if (committedCount > 0) {
          // A transaction with no change for us (or all of it written in pieces): its position
          // rides with the batch before it.
          committedLsn = item.endLsn;
          if (piecesHeld) piecesCountAt = item.endLsn;
        } else {
          // All of it is in the sink already (in pieces, if any): durable now.
          if (piecesHeld) countPieces();
          if (writing) ackAfterWrite = item.endLsn;
          // Nothing pending: the position moves at once.
          else acknowledge(item.endLsn);
        }
        // A full batch starts its write without waiting for the rest of what arrived.
        if (full()) startWrite();
        return;
      case 'idle':
        // No transaction open: everything before `walEnd` arrived, so the position can advance once
        // what arrived is durable (a source shutting down waits for exactly this acknowledgement).
        if (txOpen || batch.length > committedCount) return;
        if (committedCount > 0) {
          // It rides with the gathered batch, as the commit of a transaction with nothing for us does.
          committedLsn = item.walEnd;
          return;
        }
        if (writing) {
          ackAfterWrite = item.walEnd;
          return;
        }
        acknowledge(item.walEnd);
        // Caught up, the sink open and nothing refused: an error shown from before is over. An
        // idle position short of it may come before a change that was there all along (the
        // server echoes the start position first), which may be refused again.
        if (!writeFailed && options.caughtUpAt !== undefined && item.walEnd >= options.caughtUpAt) {
          stats.caughtUp();
        }
        return;
      case 'relation': {
        const verdict = await options.schema?.onRelation(item.relation, () => flush(false));
        if (verdict !== 'hold') return;
        // Nothing of the transaction that brings the new shape is applied: it replays after the review.
        batch = batch.slice(0, committedCount);
        await flush(false);
        return 'hold';
      }
    }
  };

  try {
    while (!signal.aborted) {
      await backfillTurn();
      if (writeFailed) throw (writeFailed as { error: unknown }).error;
      startWrite();
      // A batch that gathers (batch_max_wait_ms) is written at its deadline even if nothing else comes.
      if (committedCount > 0 && !writing && !deadline && limits.maxWaitMs > 0) {
        deadline = setTimeout(
          () => {
            deadline = undefined;
            wakeAll();
          },
          Math.max(0, batchStartedAt + limits.maxWaitMs - Date.now()),
        );
        deadline.unref();
      }
      // Backpressure: a full batch waits for the write under way rather than growing without end.
      if (writing && full(2)) {
        await settle();
        continue;
      }
      pending ??= options.next();
      const outcome = await nextOrWake(pending, null, [wake]);
      if (outcome.kind !== 'next') continue;
      const items = outcome.value;
      pending = null;
      if (items === null) break;
      for (const item of items) {
        if ((await take(item)) === 'hold') return 'held-for-schema';
        if (writing && full(2)) await settle();
        if (writeFailed) throw (writeFailed as { error: unknown }).error;
      }
    }
    // A stop applies what has fully arrived; an open transaction is replayed on the next start.
    await flush(false);
    return 'stopped';
  } finally {
    disarm();
    offAbort();
    offBackfill?.();
    await (writing as Promise<void> | null)?.catch(() => undefined);
    // Pieces of a transaction that did not commit here are replayed whole by the next run.
    stats.dropPieces();
    commits.clear();
  }
}
