import { type ChangeEvent, valueBytes } from '../../core/change.js';
import type { BatchLimits } from '../../core/sink.js';

/** The committed transactions of a batch, for one sink write, with the position to store and acknowledge. */
export interface CommittedChanges {
  changes: ChangeEvent[];
  /** The end of the last commit (or idle position) they carry. */
  position: bigint;
}

/**
 * What a commit or an idle position found in the batch: changes of the transaction waiting
 * ('with-changes'); none of its own but committed ones before it, which carry the position
 * ('with-batch'); nothing waiting, so the position is durable once the write under way is
 * ('nothing-waits'); or, for an idle position, a transaction still open or arriving ('ignored').
 */
export type PositionFate = 'with-changes' | 'with-batch' | 'nothing-waits' | 'ignored';

/**
 * The batch being gathered from the change stream: the changes of committed transactions, then
 * those of the transaction still open, with their size and the position the committed ones end
 * at. Synchronous and free of I/O; taking a change in makes no array.
 */
/**
 * While a backlog arrives (see `due`), a batch is written once it holds this share of a batch, or
 * after BEHIND_WAIT_MS: enough to make a sink transaction worth its cost, without holding the
 * first rows of a drain back for long.
 */
export const BEHIND_FILL = 0.5;
export const BEHIND_WAIT_MS = 100;

export class BatchBuilder {
  /** The committed changes first (`committedCount` of them), then the open transaction's. */
  private changes: ChangeEvent[] = [];
  private committedCount = 0;
  /** The position a write of the committed changes stores (a commit's end, or a later idle position). */
  private committedLsn: bigint | null = null;
  private bytes = 0;
  /** When the first change of the batch arrived (ms; 0 when it is empty), for `maxWaitMs`. */
  private startedAt = 0;
  private txOpen = false;

  constructor(
    private readonly limits: BatchLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Changes gathered, committed or not. */
  get size(): number {
    return this.changes.length;
  }

  /** Whether committed changes wait for a write. */
  get hasCommitted(): boolean {
    return this.committedCount > 0;
  }

  /** A transaction begins. */
  begin(): void {
    this.txOpen = true;
  }

  /** Adds a change of the open transaction. */
  add(change: ChangeEvent): void {
    if (this.changes.length === 0) this.startedAt = this.now();
    this.changes.push(change);
    this.bytes += valueBytes(change);
  }

  /** The open transaction committed at `endLsn`. */
  commit(endLsn: bigint): PositionFate {
    this.txOpen = false;
    if (this.changes.length > this.committedCount) {
      this.committedCount = this.changes.length;
      this.committedLsn = endLsn;
      if (this.startedAt === 0) this.startedAt = this.now();
      return 'with-changes';
    }
    // A transaction with no change for us (or all of it written in pieces): its position rides
    // with the batch before it, if there is one.
    if (this.committedCount === 0) return 'nothing-waits';
    this.committedLsn = endLsn;
    return 'with-batch';
  }

  /**
   * The source sent everything before `walEnd` and no transaction is open: the position can
   * advance once what arrived is durable.
   */
  idle(walEnd: bigint): PositionFate {
    if (this.txOpen || this.changes.length > this.committedCount) return 'ignored';
    if (this.committedCount === 0) return 'nothing-waits';
    // It rides with the gathered batch, as the commit of a transaction with nothing for us does.
    this.committedLsn = walEnd;
    return 'with-batch';
  }

  /** Whether the batch holds a batch's worth (`times` over: the bound of what waits for a write). */
  full(times = 1): boolean {
    return this.changes.length >= this.limits.maxEvents * times || this.bytes >= this.limits.maxBytes * times;
  }

  /**
   * Whether the open transaction is to be written in pieces now: its changes reach `times` a
   * batch, or the whole batch reaches `times` a batch's bytes.
   */
  openFull(times: number): boolean {
    return (
      this.changes.length - this.committedCount >= this.limits.maxEvents * times ||
      this.bytes >= this.limits.maxBytes * times
    );
  }

  /**
   * Whether the committed changes are to be written now: the batch is full or waited `maxWaitMs`.
   * With `behind` (a backlog is on its way from the source), it gathers to BEHIND_FILL of a batch,
   * or for BEHIND_WAIT_MS: a batch written as soon as the sink is free would hold only what arrived
   * during the last write, and many small sink transactions drain a backlog slower than a few full
   * ones.
   */
  due(behind = false): boolean {
    if (this.committedCount === 0) return false;
    if (this.full(behind ? BEHIND_FILL : 1)) return true;
    const wait = this.waitMs(behind);
    return wait <= 0 || this.now() >= this.startedAt + wait;
  }

  /** Milliseconds until the committed changes are due by their wait (0 when they are). */
  msUntilDue(behind = false): number {
    return Math.max(0, this.startedAt + this.waitMs(behind) - this.now());
  }

  /** How long a batch may gather: `maxWaitMs`, and at least BEHIND_WAIT_MS while behind. */
  waitMs(behind: boolean): number {
    return behind ? Math.max(this.limits.maxWaitMs, BEHIND_WAIT_MS) : this.limits.maxWaitMs;
  }

  /** Takes the committed transactions out of the batch, for one sink write; null when there are none. */
  take(): CommittedChanges | null {
    if (this.committedCount === 0 || this.committedLsn === null) return null;
    const all = this.changes;
    const taken: CommittedChanges = { changes: all, position: this.committedLsn };
    if (this.committedCount === all.length) {
      this.changes = [];
    } else {
      taken.changes = all.slice(0, this.committedCount);
      this.changes = all.slice(this.committedCount);
    }
    this.committedCount = 0;
    this.committedLsn = null;
    this.measure();
    return taken;
  }

  /** Takes the open transaction's changes so far (with no committed ones before them), for a piece. */
  takeOpen(): ChangeEvent[] | null {
    if (this.committedCount > 0 || this.changes.length === 0) return null;
    const open = this.changes;
    this.changes = [];
    this.measure();
    return open;
  }

  /** Drops the open transaction's changes (it replays from the source). */
  dropOpen(): void {
    this.changes.length = this.committedCount;
    this.measure();
  }

  /**
   * Keeps in the batch what `keep` returns of its committed changes and of the open
   * transaction's, each filtered apart so that the committed ones stay first.
   */
  keep(keep: (changes: readonly ChangeEvent[]) => ChangeEvent[]): void {
    const committed = keep(this.changes.slice(0, this.committedCount));
    const open = keep(this.changes.slice(this.committedCount));
    this.changes = committed.concat(open);
    this.committedCount = committed.length;
    if (this.committedCount === 0) this.committedLsn = null;
    this.measure();
  }

  /** Sizes the batch again after changes left it. */
  private measure(): void {
    let bytes = 0;
    for (const change of this.changes) bytes += valueBytes(change);
    this.bytes = bytes;
    if (this.changes.length === 0) this.startedAt = 0;
  }
}
