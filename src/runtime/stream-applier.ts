import { type ChangeEvent, type TableRef, tableKey } from '../core/change.js';
import type { SourceRelation, StreamItem } from '../core/change-stream.js';
import type { Sink } from '../core/sink.js';
import type { Logger } from '../log/logger.js';
import type { BatchLimits } from '../sinks/registry.js';
import { BatchBuilder } from './apply/batch-builder.js';
import { BatchWriter } from './apply/batch-writer.js';
import { HeldStream } from './apply/held-stream.js';
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
  /** Tables being copied again while the others stream. */
  backfill?: BackfillCoordinator;
  /** What the copies already hold, not to be applied again. */
  copyGate?: CopyGate;
  /** Copies a table again (a backfill), for a change no copy of it can take as it is. */
  copyAgain?(table: TableRef): void;
  /** Watches table shapes announced by the stream. */
  schema?: Pick<SchemaGuard, 'project' | 'onRelation'> & Partial<Pick<SchemaGuard, 'shapeFor'>>;
}

/**
 * What committed before the stream started, this far past what arrived, is a backlog on its way.
 * (The source's walsender tells no more: the end of WAL it sends with each message is that
 * message's own position.)
 */
const BEHIND_BYTES = 1024n * 1024n;

/** How the stream ended: told to stop (or the source ended it), or held for a schema review. */
export type ApplyOutcome = 'stopped' | 'held-for-schema';

/** A truncate of several tables as one event per table, so that each can be routed alone. */
function perTable(change: ChangeEvent): ChangeEvent[] {
  if (change.op !== 'truncate' || !change.tables || change.tables.length < 2) return [change];
  return change.tables.map((table) => ({ ...change, table, tables: [table] }));
}

/**
 * Applies the change stream to the sink in batches of whole transactions, each batch with its
 * checkpoint in one sink transaction, and acknowledges to the source only what is durable. The
 * sink writes one batch while the next gathers: a batch is written as soon as the sink is free
 * and a transaction has committed, so a light stream is written a transaction at a time (its lag
 * is one sink commit) while under load each batch holds what arrived during the previous write.
 * A transaction larger than a batch is applied in pieces under the previous checkpoint: a crash
 * in between replays it whole, and the sink's idempotent writes converge. Its pieces' events are
 * counted when its commit is durable, so that the replay does not count them twice.
 *
 * The batch is gathered by a `BatchBuilder` and written by a `BatchWriter`; this loop feeds them
 * the stream and gives the backfill its turn, the schema guard its say, and the waits their wake-ups.
 */
export async function applyStream(options: StreamApplierOptions): Promise<ApplyOutcome> {
  const { stats, limits, signal, backfill } = options;
  const commits = new PendingCommits((oldestMs) => {
    stats.oldestPendingCommit(oldestMs);
  });
  // Pieces of an earlier run, if it stopped mid-transaction, are replayed whole.
  stats.dropPieces();
  const builder = new BatchBuilder(limits);
  const writer = new BatchWriter({
    sink: options.sink,
    epoch: options.epoch,
    startLsn: options.startLsn,
    ack: options.ack,
    stats,
    commits,
    onWriteEnded: () => wakeAll(),
  });

  // The source position reached: the last commit or idle position that arrived.
  let arrived = options.startLsn;
  // A backlog on its way (what committed before the stream started, still well ahead of what
  // arrived): batches gather until BEHIND_FILL of a batch, or for BEHIND_WAIT_MS.
  const caughtUpAt = options.caughtUpAt;
  // The run's first batch does not gather: the sink has been idle since the start, so a wait
  // would only hold the backlog's first rows back (and leave the sink idle longer).
  let wroteOnce = false;
  const behind = () => wroteOnce && caughtUpAt !== undefined && arrived + BEHIND_BYTES < caughtUpAt;

  /** Starts writing the committed transactions, unless the sink is busy or the batch still gathers. */
  const startWrite = () => {
    if (writer.busy || writer.failed || !builder.due(behind())) return;
    const taken = builder.take();
    if (!taken) return;
    wroteOnce = true;
    writer.start(taken.changes, taken.position);
  };

  /** Makes everything committed durable now; with `partial`, also the open transaction's changes so far. */
  const flush = async (partial: boolean): Promise<undefined> => {
    await writer.settle();
    const taken = builder.take();
    if (taken) await writer.write(taken.changes, taken.position);
    const open = partial ? builder.takeOpen() : null;
    if (open) await writer.writePiece(open);
  };

  // A streamed transaction is written while it arrives into a sink that can hold it open.
  const held = options.sink.openHeldTransaction
    ? new HeldStream({
        sink: options.sink,
        epoch: options.epoch,
        stats,
        logger: options.logger,
        // A batch's worth a piece, at most a batch's bytes. Three batches' worth saves savepoints
        // and COPYs (a 1,000,000-row transaction went from 0.93-0.97x native's speed to
        // 1.01-1.06x) but held 223 rather than 185 MiB at the peak of a 5,000,000-row one.
        pieceEvents: limits.maxEvents,
        pieceBytes: limits.maxBytes,
        flush: () => flush(false),
        route: (arrived) => {
          if (backfill?.claims(arrived) || options.copyGate?.active) return 'fall back';
          const change = options.schema ? options.schema.project(arrived) : arrived;
          return options.tables.has(tableKey(change.table)) ? change : null;
        },
        ...(options.schema?.shapeFor ? { shapeFor: options.schema.shapeFor.bind(options.schema) } : {}),
        delivered: (endLsn) => writer.ackWhenDurable(endLsn),
      })
    : undefined;

  /** Lets the backfill start or finish, between two batches. */
  const backfillTurn = async () => {
    if (!backfill?.needsTurn) return;
    // A copy's reset would wait for the rows a held transaction locks.
    await held?.fallBackNow('a backfill starts');
    await writer.settle();
    // Changes of a table that just started a backfill, still waiting in the batch, come from
    // transactions its snapshot will see: the copy carries them, so they are dropped here (a
    // repair of rows keeps them, to apply before its rows).
    builder.keep((changes) => backfill.keepInBatch(changes));
    await backfill.turn((changes) => writer.writeAtDurable(changes));
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
    builder.add(change);
  };

  /** A new shape of a table: 'hold' when a schema review stops the stream before it. */
  const relation = async (
    schema: NonNullable<StreamApplierOptions['schema']>,
    item: SourceRelation,
  ): Promise<'hold' | undefined> => {
    const verdict = await schema.onRelation(item, async () => {
      // The sink's table is about to change: a transaction held open would block it.
      await held?.fallBackNow('a table of the sink changes');
      await flush(false);
    });
    if (verdict !== 'hold') return;
    // Nothing of the transaction that brings the new shape is applied: it replays after the review.
    builder.dropOpen();
    await flush(false);
    return 'hold';
  };

  /**
   * Takes in one item, synchronously unless it must wait for the sink (a piece to write) or for a
   * schema review: then it returns what to await, 'hold' when the review stops the stream before it.
   */
  const take = (item: StreamItem): Promise<'hold' | undefined> | undefined => {
    switch (item.kind) {
      case 'begin':
        builder.begin();
        commits.begin(item.commitTimeMs);
        return;
      case 'change':
        // Only a truncate of several tables is split: no array is made for the other changes.
        if (item.change.op === 'truncate') for (const split of perTable(item.change)) gather(split);
        else gather(item.change);
        // One transaction larger than a batch is written in pieces: the first once it holds twice
        // a batch (a transaction up to that stays whole), the next ones at a batch each, so that
        // no more of it than that is held while the sink writes.
        if (builder.openFull(writer.piecesHeld ? 1 : 2)) return flush(true);
        return;
      case 'commit': {
        if (item.endLsn > arrived) arrived = item.endLsn;
        const fate = builder.commit(item.endLsn);
        commits.committed(fate === 'with-changes');
        // Nothing waits: all of it is in the sink already (in pieces, if any), durable once the
        // write under way is, or at once.
        writer.committed(item.endLsn, fate !== 'nothing-waits');
        // A full batch starts its write without waiting for the rest of what arrived.
        if (builder.full()) startWrite();
        return;
      }
      case 'idle':
        if (item.walEnd > arrived) arrived = item.walEnd;
        // No transaction open: everything before `walEnd` arrived, so the position can advance once
        // what arrived is durable (a source shutting down waits for exactly this acknowledgement).
        if (builder.idle(item.walEnd) !== 'nothing-waits') return;
        if (!writer.ackWhenDurable(item.walEnd)) return;
        // Caught up, the sink open and nothing refused: an error shown from before is over. An
        // idle position short of it may come before a change that was there all along (the
        // server echoes the start position first), which may be refused again.
        if (!writer.failed && options.caughtUpAt !== undefined && item.walEnd >= options.caughtUpAt) {
          stats.caughtUp();
        }
        return;
      case 'relation':
        held?.noteRelation(item.relation);
        return options.schema ? relation(options.schema, item.relation) : undefined;
      default:
        // A streamed transaction as it arrives: written ahead of its commit where the sink can.
        if (held) return held.take(item)?.then(() => undefined);
        if (item.kind === 'stream-commit') item.verdict.settle(false);
        return;
    }
  };

  try {
    while (!signal.aborted) {
      await backfillTurn();
      writer.throwIfFailed();
      startWrite();
      // A batch that gathers (batch_max_wait_ms, or behind) is written at its deadline even if nothing else comes.
      if (builder.hasCommitted && !writer.busy && !deadline && builder.waitMs(behind()) > 0) {
        deadline = setTimeout(() => {
          deadline = undefined;
          wakeAll();
        }, builder.msUntilDue(behind()));
        deadline.unref();
      }
      // Backpressure: a full batch waits for the write under way rather than growing without end.
      if (writer.busy && builder.full(2)) {
        await writer.settle();
        continue;
      }
      pending ??= options.next();
      const outcome = await nextOrWake(pending, null, [wake]);
      if (outcome.kind !== 'next') continue;
      const items = outcome.value;
      pending = null;
      if (items === null) break;
      // Indexed: a for-of in this function made an iterator result per item.
      for (let i = 0; i < items.length; i++) {
        const taking = take(items[i] as StreamItem);
        if (taking && (await taking) === 'hold') return 'held-for-schema';
        if (writer.busy && builder.full(2)) await writer.settle();
        writer.throwIfFailed();
      }
    }
    // A stop applies what has fully arrived; an open transaction is replayed on the next start.
    await flush(false);
    return 'stopped';
  } finally {
    disarm();
    offAbort();
    offBackfill?.();
    // Pieces of a transaction that did not commit here are replayed whole by the next run.
    await held?.close();
    await writer.close();
    commits.clear();
  }
}
