import { type ChangeEvent, tableKey } from '../../core/change.js';
import type { ChangeStream, ChangeStreamStats, StreamedItem, StreamItem } from '../../core/change-stream.js';
import { StreamVerdict } from '../../core/stream-verdict.js';

/** What a subscription asks of the shared stream it reads. */
export interface SubscriptionOwner {
  /** The pipeline acknowledged `lsn`: the stream may let the source forget what is before the smallest. */
  acknowledged(): void;
  /** The pipeline took every item waiting for it: the stream may read on. */
  drained(): void;
  /** The pipeline stops reading. */
  leave(subscription: StreamSubscription): Promise<void>;
  /** The counters of the connection the stream reads. */
  upstreamStats(): ChangeStreamStats | undefined;
}

/**
 * One pipeline's view of a shared source stream: the items of its tables, from its position on,
 * as a `ChangeStream` of its own. The stream routes every item it reads to every subscription; a
 * subscription keeps a transaction's changes of its tables (with the transaction's begin and
 * commit around them), and of any other transaction only its end position, as an idle item, so
 * that the pipeline's checkpoint moves on while its tables see nothing. A transaction whose
 * commit is before the subscription's position is one the pipeline has: a stream restarted
 * further back for another pipeline replays it, and it is skipped here.
 *
 * A large transaction the source sends before its commit goes, as it arrives, to a pipeline whose
 * sink can hold it open (`live`) and that reads one of its tables. At its commit each pipeline
 * says whether it delivered it; the stream replays it whole unless every pipeline that needs it did,
 * and a pipeline that delivered it (or never needed it) skips the replay.
 */
export class StreamSubscription implements ChangeStream {
  /** Everything committed before it has been handed over (or skipped as another table's). */
  position: bigint;
  /** What the pipeline acknowledged as durable: the source keeps every change after it. */
  acked: bigint;
  private queue: StreamItem[] = [];
  private waiter: { resolve: (items: StreamItem[] | null) => void; reject: (e: unknown) => void } | undefined;
  private failure: { error: unknown } | undefined;
  private closed = false;
  /** The transaction being routed: skipped whole, or kept with its begin handed over or not yet. */
  private txn: { skip: true } | { skip: false; begin: StreamItem; shown: boolean } | undefined;
  /** Transactions arriving before their commit that touch the pipeline's tables, by xid. */
  private readonly streamed = new Set<number>();
  /** Large transactions that began to arrive before the pipeline joined: it takes their replay. */
  private readonly missed = new Set<number>();
  /**
   * Reading while its tables are copied: what comes waits until the copy ends. Past a queue's
   * worth it overflows instead of holding the stream back: what it had is dropped, and the stream
   * restarts at its position once the copy ends.
   */
  private copying: boolean;
  private overflowed = false;
  /** Verdicts asked of the pipeline and not given yet: given as "not delivered" if it leaves. */
  private readonly verdicts = new Set<StreamVerdict>();

  constructor(
    readonly pipelineId: string,
    private readonly tables: ReadonlySet<string>,
    from: bigint,
    private readonly owner: SubscriptionOwner,
    /** Whether the pipeline takes a large transaction as it arrives (its sink can hold one open). */
    readonly live = false,
    options: { copying?: boolean; capacity?: number } = {},
  ) {
    this.position = from;
    this.acked = from;
    this.from = from;
    this.copying = options.copying ?? false;
    this.capacity = options.capacity ?? Number.POSITIVE_INFINITY;
  }

  private readonly from: bigint;
  private readonly capacity: number;

  /** Whether the stream waits for it when its queue is full (a copying one overflows instead). */
  get paces(): boolean {
    return !this.copying;
  }

  /**
   * Its copy ended: it reads what waited. True when it overflowed meanwhile: the stream must
   * restart at its position for it.
   */
  copied(): boolean {
    this.copying = false;
    const overflowed = this.overflowed;
    this.overflowed = false;
    return overflowed;
  }

  /** Items waiting for the pipeline. */
  get queued(): number {
    return this.queue.length;
  }

  get ended(): boolean {
    return this.closed || this.failure !== undefined;
  }

  /** Whether the pipeline reads a table. */
  reads(table: { schema: string; table: string }): boolean {
    return this.tables.has(tableKey(table));
  }

  /** Large transactions under way when the pipeline joined: it missed their start, and takes their replay. */
  missedStart(xids: Iterable<number>): void {
    for (const xid of xids) this.missed.add(xid);
  }

  /**
   * Joins in the middle of a transaction: nothing of it is handed over (its start went by); the
   * stream restarts before it if the pipeline needs it.
   */
  joinMidTransaction(): void {
    this.txn = { skip: true };
  }

  /** Takes one item of the stream, in the stream's order. */
  route(item: StreamItem): void {
    if (this.ended || this.overflowed) return;
    if (this.copying && this.queue.length >= this.capacity) {
      this.overflow();
      return;
    }
    switch (item.kind) {
      case 'begin':
        this.txn =
          item.commitLsn !== undefined && item.commitLsn < this.position
            ? { skip: true }
            : { skip: false, begin: item, shown: false };
        return;
      case 'relation':
        if (this.reads(item.relation)) this.keep(item);
        return;
      case 'change':
        if (this.wants(item.change)) this.keep(item);
        return;
      case 'commit': {
        const txn = this.txn;
        this.txn = undefined;
        if (!txn || txn.skip) return;
        if (txn.shown) this.push(item);
        else this.idle(item.endLsn);
        if (item.endLsn > this.position) this.position = item.endLsn;
        return;
      }
      case 'idle':
        if (item.walEnd <= this.position) return;
        this.idle(item.walEnd);
        this.position = item.walEnd;
        return;
      case 'stream-change':
      case 'stream-relation': {
        if (this.missed.has(item.xid)) return;
        const wanted = item.kind === 'stream-change' ? this.touches(item.change) : this.reads(item.relation);
        if (!wanted) return;
        // Held for its verdict until the copy ends, it would hold the stream: it takes the replay.
        if (this.copying) {
          this.missed.add(item.xid);
          return;
        }
        this.streamed.add(item.xid);
        if (this.live) this.push(item);
        return;
      }
      case 'stream-abort':
        if (item.subxid === item.xid) this.missed.delete(item.xid);
        if (!this.streamed.has(item.xid)) return;
        if (item.subxid === item.xid) this.streamed.delete(item.xid);
        if (this.live) this.push(item);
        return;
      case 'stream-commit':
        // The stream asks each pipeline for its verdict (see streamCommit).
        return;
    }
  }

  /**
   * A transaction that arrived before its commit committed: whether this pipeline delivered it
   * (or has nothing in it), so that its replay may be skipped for it.
   */
  streamCommit(item: StreamedItem & { kind: 'stream-commit' }): boolean | Promise<boolean> {
    const involved = this.streamed.delete(item.xid);
    if (this.ended) return true;
    // Restarted for after its copy: the restarted stream gives it the transaction.
    if (this.overflowed) return true;
    // Its start went by before the pipeline joined: the replay gives it whole.
    if (this.missed.delete(item.xid)) return false;
    if (!involved) {
      // None of its tables: the transaction passes by, as another table's does.
      if (item.endLsn > this.position) {
        this.idle(item.endLsn);
        this.position = item.endLsn;
      }
      return true;
    }
    if (!this.live) return false;
    const verdict = new StreamVerdict();
    this.verdicts.add(verdict);
    this.push({ ...item, verdict });
    return verdict.decided.then((delivered) => {
      this.verdicts.delete(verdict);
      if (delivered && item.endLsn > this.position) this.position = item.endLsn;
      return delivered;
    });
  }

  /** The shape of a table announced before the pipeline joined, handed over first. */
  announce(item: StreamItem & { kind: 'relation' }): void {
    if (this.reads(item.relation)) this.push(item);
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.failure = { error };
    this.abandonVerdicts();
    const waiter = this.waiter;
    this.waiter = undefined;
    if (!waiter) return;
    if (this.queue.length > 0) waiter.resolve(this.take());
    else waiter.reject(error);
  }

  next(): Promise<StreamItem[] | null> {
    if (this.queue.length > 0) return Promise.resolve(this.take());
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  ack(lsn: bigint): void {
    if (lsn <= this.acked) return;
    this.acked = lsn;
    this.owner.acknowledged();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.abandonVerdicts();
    this.waiter?.resolve(null);
    this.waiter = undefined;
    await this.owner.leave(this);
  }

  stats(): ChangeStreamStats {
    const upstream = this.owner.upstreamStats();
    return {
      transactions: upstream?.transactions ?? 0,
      streamedTransactions: upstream?.streamedTransactions ?? 0,
      spilledTransactions: upstream?.spilledTransactions ?? 0,
      queuedItems: this.queue.length + (upstream?.queuedItems ?? 0),
      queuedBytes: upstream?.queuedBytes ?? 0,
      arrivingSinceMs: upstream?.arrivingSinceMs ?? null,
      failedStatusUpdates: upstream?.failedStatusUpdates ?? 0,
    };
  }

  /** Too much came while its tables were copied: it starts again from its position after the copy. */
  private overflow(): void {
    this.overflowed = true;
    this.queue = [];
    this.position = this.from;
    this.txn = undefined;
    this.streamed.clear();
    this.abandonVerdicts();
  }

  /** A pipeline gone does not hold the stream's verdict: what it did not deliver is replayed. */
  private abandonVerdicts(): void {
    for (const verdict of this.verdicts) verdict.settle(false);
    this.verdicts.clear();
  }

  /** A change of the pipeline's tables (a truncate: of any of them) in a transaction it needs. */
  private wants(change: ChangeEvent): boolean {
    return this.txn?.skip === false && this.touches(change);
  }

  /** A change of the pipeline's tables: a truncate, of any of them. */
  private touches(change: ChangeEvent): boolean {
    if (change.op === 'truncate' && change.tables) return change.tables.some((t) => this.reads(t));
    return this.reads(change.table);
  }

  private keep(item: StreamItem): void {
    const txn = this.txn;
    if (txn?.skip) return;
    if (txn && !txn.shown) {
      txn.shown = true;
      this.push(txn.begin);
    }
    this.push(item);
  }

  /** An idle position: consecutive ones are one, the last. */
  private idle(walEnd: bigint): void {
    const last = this.queue[this.queue.length - 1];
    if (last?.kind === 'idle') this.queue[this.queue.length - 1] = { kind: 'idle', walEnd };
    else this.push({ kind: 'idle', walEnd });
  }

  private push(item: StreamItem): void {
    this.queue.push(item);
    const waiter = this.waiter;
    if (!waiter) return;
    this.waiter = undefined;
    // Handed over once the stream routed what it read, not item by item.
    queueMicrotask(() => {
      if (this.queue.length > 0) waiter.resolve(this.take());
      else if (this.failure) waiter.reject(this.failure.error);
      else if (this.closed) waiter.resolve(null);
      else this.waiter = waiter;
    });
  }

  private take(): StreamItem[] {
    const items = this.queue;
    this.queue = [];
    this.owner.drained();
    return items;
  }
}
