import type {
  ChangeStream,
  ChangeStreamStats,
  SourceRelation,
  StreamItem,
} from '../../core/change-stream.js';
import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';
import type { SlotClaim, Source, SourceLogger } from '../../core/source.js';
import { SlotMissingError } from '../../core/source-errors.js';
import { sqlstateOf } from '../../core/sqlstate.js';
import type { Logger } from '../../log/logger.js';
import type { CopyPace } from '../snapshot/copy-pace.js';
import { SharedCopyPace } from './shared-copy-pace.js';
import { StreamSubscription, type SubscriptionOwner } from './stream-subscription.js';

/** A pipeline of the stream as the store keeps it. */
export interface ParkedMember {
  pipelineId: string;
  /** Where it needs the stream from, as last noted (see savePositions); null: never claimed. */
  lsn: bigint | null;
  /** Let go by the stream: its next start copies its tables again. */
  released?: boolean;
}

/** A claim of the stream's slot for one pipeline (see StreamGroup.claim). */
export interface StreamClaim extends SlotClaim {
  /**
   * Where the pipeline last acknowledged reading the stream, when it did and was not let go: all
   * before it is durable at its sink, including transactions that left nothing to write there (a
   * table's changes its copy carried, another table's). Its checkpoint may be behind this, as a
   * slot of its own may be behind its confirmed position; the stream restarts from here, not
   * from there, as a walsender does, so what the pipeline already decided on is not read again.
   */
  acknowledged?: bigint;
}

export interface StreamGroupDeps {
  /** The stream's name: its slot's and its publication's at the source. */
  name: string;
  /** A source session on the stream's slot and publication (SourceOptions.stream set), connected. */
  openSource(): Promise<Source>;
  /** Every pipeline of the stream the store knows, with where it needs the stream from. */
  members(): Promise<ParkedMember[]>;
  /**
   * Notes durably where pipelines need the stream from. The slot is never acknowledged past a
   * noted position: an instance that takes the stream over after a crash knows no more than these.
   */
  savePositions(positions: ReadonlyMap<string, bigint>): Promise<void>;
  /** Notes durably that the stream let the pipeline go: its next start copies its tables again. */
  release(pipelineId: string): Promise<void>;
  logger: Logger;
  /** WAL a pipeline that does not read the stream may hold at the source before the stream lets it go. */
  holdWalBytes: number;
  spoolDir?: string;
  statusIntervalMs?: number;
}

/** Items a pipeline may have waiting before the stream stops reading. */
const HIGH_WATER = 5_000;
/** How often the positions of the pipelines not reading the stream are read again. */
const PARKED_REFRESH_MS = 5_000;
/** How often the positions the reading pipelines acknowledged are noted in the store. */
const POSITIONS_SAVE_MS = 1_000;
/** A stream that routed a commit this recently carries changes: a copy beside it is paced. */
const STREAMING_WINDOW_MS = 1_000;
/** How long the stream waits for a reader with a full queue before it lets it go. */
const STALL_MS = 5_000;
/** How long a restart waits for the walsender before it to let the slot go: 10 s in all. */
const SLOT_IN_USE_WAIT_MS = 100;
const SLOT_IN_USE_WAITS = 100;

/**
 * A pipeline took nothing from its shared stream for a while (its sink down or slow): the stream
 * went on without it. Retried for as long as it lasts: it reads again from its checkpoint.
 */
export class StreamDetachedError extends Error implements RetryAdvice {
  readonly retry: RetryClass = 'until-reachable';

  constructor(stallMs: number) {
    super(
      `took nothing from the shared source stream for ${stallMs / 1000} s while the other pipelines of the stream waited: ` +
        'it reads again from its checkpoint (give it "slot": "own" if it is always slower than the others)',
    );
    this.name = 'StreamDetachedError';
  }
}

/** The slot is still streamed by another walsender (SQLSTATE 55006, object in use). */
function slotInUse(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    if (sqlstateOf(e) === '55006') return true;
    if (e instanceof Error && /replication slot .* is active for PID/.test(e.message)) return true;
  }
  return false;
}

/**
 * One source stream shared by the pipelines of one source connection: one slot, one replication
 * connection, fanned out to a subscription per pipeline. The slot is acknowledged at the smallest
 * position any pipeline still needs:
 * - a reading pipeline's acknowledged (durable) position;
 * - a starting pipeline's claimed position, until it reads (its copy needs what follows it);
 * - a pipeline that does not read now (paused, stopped, failed, held for a schema review): its last
 *   checkpoint, while the WAL after it stays under `holdWalBytes`. Past that the stream lets it go:
 *   its start finds its checkpoint behind the slot and copies its tables again.
 * A pipeline joining behind where the stream is restarts the stream there, between two
 * transactions; the others skip what they have. The slowest reading pipeline sets the pace of all.
 */
export class StreamGroup implements SubscriptionOwner {
  readonly name: string;
  private readonly members = new Set<StreamSubscription>();
  /** Positions claimed by starting pipelines that do not read yet. */
  private readonly holds = new Map<string, bigint>();
  /** Where pipelines that stopped reading in this process left off, until the store has it. */
  private readonly left = new Map<string, bigint>();
  /** Where each pipeline needs the stream from, as the store has it; undefined until read once. */
  private parked: Map<string, bigint | null> | undefined;
  private parkedReadAt = 0;
  private savedAt = 0;
  private saving = false;
  private saveTimer: NodeJS.Timeout | undefined;
  /** Let go, and noted so in the store: no longer held. */
  private readonly released = new Set<string>();
  /** Being noted as let go: held until the store has it. */
  private readonly releasing = new Set<string>();
  /** The shapes the upstream announced in this session, for a pipeline joining after them. */
  private readonly relations = new Map<number, SourceRelation>();
  private upstream: ChangeStream | undefined;
  private pumping: Promise<void> | undefined;
  private restartWanted = false;
  /** Joined behind the stream: given nothing until the restart they wait for. */
  private readonly awaitingRestart = new Set<StreamSubscription>();
  /** Large transactions arriving before their commit, by xid: a pipeline joining now missed their start. */
  private readonly arriving = new Set<number>();
  private inTransaction = false;
  private transactionCommitLsn: bigint | undefined;
  /** Everything committed before it went by (was routed, or is before the upstream's start). */
  private delivered = 0n;
  private lastAck = 0n;
  private onRoom: (() => void) | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  /** When (performance.now()) the stream last routed a transaction's commit. */
  private committedAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: StreamGroupDeps) {
    this.name = deps.name;
  }

  /** Whether anything reads, or is about to read, the stream. */
  get busy(): boolean {
    return this.members.size > 0 || this.holds.size > 0 || this.pumping !== undefined;
  }

  /** Runs `work` alone among the stream's claims, publications and starts. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const done = this.tail.then(work);
    this.tail = done.catch(() => undefined);
    return done;
  }

  /**
   * Readies the slot for a starting pipeline and holds the stream at its position until it reads
   * or lets go (`release`). While the stream runs here, the slot is only read (claiming it would
   * end the stream's own connection); otherwise it is claimed as a slot of its own is (see
   * Source.claimSlot): a reader left behind is ended, a missing slot created when `mayCreate`.
   */
  claim(
    pipelineId: string,
    source: Source,
    options: { mayCreate: boolean; logger: SourceLogger },
  ): Promise<StreamClaim> {
    return this.exclusive(async () => {
      // Read before this claim notes its claimed position over it.
      const acknowledged = await this.acknowledgedBy(pipelineId);
      let claim: SlotClaim;
      if (this.pumping) {
        const slot = (await source.positions([pipelineId])).slots.get(pipelineId);
        if (!slot) throw new SlotMissingError(this.name, 'does not exist any more');
        claim = { position: slot.confirmedLsn ?? 0n };
      } else {
        claim = await source.claimSlot(pipelineId, options);
      }
      // The slot made anew: a pipeline that claimed the one before lost what it held for it. Here,
      // among the claims: one claiming the new slot after this is not let go. One that never
      // claimed has nothing to lose.
      if (claim.snapshot) await this.releaseAllBut(pipelineId);
      // The source may not have applied the last acknowledgement yet: a pipeline behind it was let go.
      if (!claim.snapshot && this.lastAck > claim.position) claim = { ...claim, position: this.lastAck };
      // Noted before the pipeline copies anything: held by whoever streams next, even after a crash.
      await this.deps.savePositions(new Map([[pipelineId, claim.position]]));
      this.parked?.set(pipelineId, claim.position);
      this.holds.set(pipelineId, claim.position);
      this.left.delete(pipelineId);
      this.released.delete(pipelineId);
      return claim.snapshot || acknowledged === undefined ? claim : { ...claim, acknowledged };
    });
  }

  /** Where the pipeline last acknowledged reading: in this process, else as the store noted it. */
  private async acknowledgedBy(pipelineId: string): Promise<bigint | undefined> {
    const left = this.left.get(pipelineId);
    if (left !== undefined) return left;
    const noted = (await this.deps.members()).find((m) => m.pipelineId === pipelineId);
    return noted && !noted.released && noted.lsn !== null ? noted.lsn : undefined;
  }

  private async releaseAllBut(pipelineId: string): Promise<void> {
    for (const member of await this.deps.members()) {
      if (member.pipelineId === pipelineId || member.lsn === null || member.released) continue;
      await this.deps.release(member.pipelineId);
      this.released.add(member.pipelineId);
    }
  }

  /**
   * Where a pipeline that copies every one of its tables next joins, given its claimed position:
   * where the stream is now, if it runs. Every transaction that commits after this call is at or
   * after it; every one before is in a snapshot taken after it. Joining there, it makes the stream
   * restart for nothing.
   */
  joinPosition(claimed: bigint): bigint {
    return this.upstream && this.delivered > claimed ? this.delivered : claimed;
  }

  /** A copy that read while it ran ended: the stream restarts at its position if it overflowed. */
  copied(subscription: StreamSubscription): void {
    if (subscription.copied() && this.members.has(subscription)) this.restartFor(subscription);
    this.onRoom?.();
  }

  /** The pipeline will not read after its claim (its start failed or stopped before). */
  release(pipelineId: string): void {
    const held = this.holds.get(pipelineId);
    if (held === undefined) return;
    this.holds.delete(pipelineId);
    this.left.set(pipelineId, held);
  }

  /** The pipeline reads the stream's items of `tables` (by `schema.table`) committed from `from` on. */
  subscribe(
    pipelineId: string,
    tables: ReadonlySet<string>,
    from: bigint,
    options: { live?: boolean; copying?: boolean } = {},
  ): StreamSubscription {
    const subscription = new StreamSubscription(pipelineId, tables, from, this, options.live ?? false, {
      copying: options.copying ?? false,
      capacity: HIGH_WATER,
    });
    this.holds.delete(pipelineId);
    this.left.delete(pipelineId);
    this.released.delete(pipelineId);
    // Joining a session that goes on: the walsender announced the shapes before, and will not again.
    // A session started or restarted for it announces them itself, as they are at its position:
    // those seen here may be later ones (a pipeline coming back behind a column dropped since).
    const joinsSession = this.members.size > 0 && this.upstream !== undefined && !this.restartWanted;
    this.members.add(subscription);
    if (!this.pumping) {
      this.startPump();
      return subscription;
    }
    // A large transaction arriving now is replayed for it whole at its commit.
    subscription.missedStart(this.arriving);
    if (this.inTransaction) {
      subscription.joinMidTransaction();
      // One that copies its tables next has the transaction going by in its copy: it committed.
      const needed = this.transactionCommitLsn === undefined || this.transactionCommitLsn >= from;
      if (needed && !options.copying) this.restartFor(subscription);
    } else if (from < this.delivered) {
      this.restartFor(subscription);
    }
    if (joinsSession && !this.awaitingRestart.has(subscription)) {
      for (const relation of this.relations.values()) subscription.announce({ kind: 'relation', relation });
    }
    return subscription;
  }

  /**
   * The pace of the pipeline's copies: at most `rowsPerSecond` while the stream carries changes
   * (a commit within the last second) and another pipeline reads it (see SharedCopyPace), as fast
   * as they go otherwise. None when unlimited (0).
   */
  copyPace(pipelineId: string, rowsPerSecond: number): CopyPace | undefined {
    if (rowsPerSecond <= 0) return undefined;
    const othersStream = () =>
      performance.now() - this.committedAtMs < STREAMING_WINDOW_MS &&
      [...this.members].some((m) => m.pipelineId !== pipelineId && m.paces);
    return new SharedCopyPace(rowsPerSecond, othersStream);
  }

  acknowledged(): void {
    this.scheduleSave();
    // Between two upstream sessions: told to the next one.
    if (!this.upstream) return;
    const position = this.ackPosition();
    if (position === undefined || position <= this.lastAck) return;
    this.lastAck = position;
    this.upstream?.ack(position);
  }

  drained(): void {
    this.onRoom?.();
  }

  async leave(subscription: StreamSubscription): Promise<void> {
    if (!this.members.delete(subscription)) return;
    this.awaitingRestart.delete(subscription);
    const { pipelineId, acked } = subscription;
    this.left.set(pipelineId, acked);
    this.deps.savePositions(new Map([[pipelineId, acked]])).then(
      () => {
        this.parked?.set(pipelineId, acked);
        if (this.left.get(pipelineId) === acked) this.left.delete(pipelineId);
      },
      (error: unknown) =>
        this.deps.logger.warn(
          { err: error, pipelineId },
          'cannot note where a pipeline left the shared stream',
        ),
    );
    this.onRoom?.();
    // The last reader gone: the walsender is let go now, not at the next item.
    if (this.members.size === 0) await this.upstream?.close();
  }

  upstreamStats(): ChangeStreamStats | undefined {
    return this.upstream?.stats();
  }

  /** Where each pipeline of the stream stands for the stream, by id: what the source keeps for it. */
  memberPositions(): Map<string, bigint> {
    const positions = new Map<string, bigint>();
    for (const [id, lsn] of this.parked ?? []) {
      if (lsn !== null && !this.released.has(id)) positions.set(id, lsn);
    }
    for (const [id, lsn] of this.left) positions.set(id, lsn);
    for (const [id, lsn] of this.holds) positions.set(id, lsn);
    for (const member of this.members) positions.set(member.pipelineId, member.acked);
    return positions;
  }

  /**
   * Starts reading once the claims under way ended (a claim of the slot ends whoever streams from
   * it): a claim made later sees the stream running, and only reads the slot.
   */
  private startPump(): void {
    this.pumping = this.exclusive(async () => undefined)
      .then(() => this.pump())
      .finally(() => {
        this.pumping = undefined;
        // Joined while the stream was ending.
        if (this.members.size > 0) this.startPump();
      });
  }

  /**
   * Restarts the upstream from the smallest position of its readers, between two transactions,
   * for a reader that joined behind it: until then it is given nothing (what goes by now may come
   * after what it lacks).
   */
  private restartFor(subscription: StreamSubscription): void {
    this.awaitingRestart.add(subscription);
    this.restartWanted = true;
    if (!this.inTransaction) void this.upstream?.close();
  }

  /** The smallest position the source must keep, once the positions of pipelines not reading are known. */
  private ackPosition(): bigint | undefined {
    if (!this.parked) return undefined;
    let min: bigint | undefined;
    const take = (lsn: bigint) => {
      if (min === undefined || lsn < min) min = lsn;
    };
    for (const member of this.members) take(member.acked);
    for (const lsn of this.holds.values()) take(lsn);
    for (const lsn of this.left.values()) take(lsn);
    const reading = new Set([...this.members].map((m) => m.pipelineId));
    // What the store has: all that an instance taking over after a crash would hold.
    for (const [id, lsn] of this.parked) {
      if (lsn === null) continue;
      if (reading.has(id) || this.holds.has(id)) {
        take(lsn);
        continue;
      }
      if (this.released.has(id)) continue;
      const own = this.left.get(id) ?? lsn;
      if (this.delivered - own > BigInt(this.deps.holdWalBytes)) this.letGo(id, this.delivered - own);
      take(lsn);
    }
    return min;
  }

  /** Notes the reading pipelines' positions at most every POSITIONS_SAVE_MS, the first at once. */
  private scheduleSave(): void {
    if (this.saveTimer) return;
    const wait = Math.max(0, this.savedAt + POSITIONS_SAVE_MS - Date.now());
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      void this.savePositions();
    }, wait);
    this.saveTimer.unref();
  }

  /** Notes the positions the reading pipelines acknowledged since the last note. */
  private async savePositions(): Promise<void> {
    if (this.saving || !this.parked) return;
    this.saving = true;
    this.savedAt = Date.now();
    const moved = new Map<string, bigint>();
    for (const member of this.members) {
      const noted = this.parked.get(member.pipelineId);
      if (noted === undefined || noted === null || member.acked > noted)
        moved.set(member.pipelineId, member.acked);
    }
    try {
      if (moved.size === 0) return;
      await this.deps.savePositions(moved);
      for (const [id, lsn] of moved) this.parked.set(id, lsn);
      this.acknowledged();
    } catch (error) {
      // Acknowledged no further until the store has them.
      this.deps.logger.warn({ err: error }, 'cannot note the shared stream’s positions');
    } finally {
      this.saving = false;
    }
  }

  /**
   * Lets a pipeline that does not read go, once the store notes it (its next start must know to
   * copy its tables again): it is held until then.
   */
  private letGo(pipelineId: string, heldWalBytes: bigint): void {
    if (this.releasing.has(pipelineId)) return;
    this.releasing.add(pipelineId);
    this.deps.release(pipelineId).then(
      () => {
        this.releasing.delete(pipelineId);
        // Back meanwhile: it reads, and is not let go.
        if (this.holds.has(pipelineId) || [...this.members].some((m) => m.pipelineId === pipelineId)) return;
        this.released.add(pipelineId);
        this.deps.logger.warn(
          { pipelineId, heldWalBytes: Number(heldWalBytes) },
          'a pipeline not reading the shared stream held more WAL than allowed: the stream lets it go, and its next start copies its tables again',
        );
      },
      (error: unknown) => {
        this.releasing.delete(pipelineId);
        this.deps.logger.warn(
          { err: error, pipelineId },
          'cannot note a pipeline let go by the shared stream',
        );
      },
    );
  }

  private async refreshParked(): Promise<void> {
    try {
      const rows = await this.deps.members();
      const parked = new Map(rows.map((r) => [r.pipelineId, r.lsn] as const));
      // A pipeline deleted holds nothing.
      for (const id of this.left.keys()) if (!parked.has(id)) this.left.delete(id);
      const reading = new Set([...this.members].map((m) => m.pipelineId));
      for (const row of rows) {
        if (row.released && !reading.has(row.pipelineId) && !this.holds.has(row.pipelineId)) {
          this.released.add(row.pipelineId);
        }
      }
      // Noted by this instance meanwhile: the store may have answered from before.
      for (const [id, lsn] of this.parked ?? []) {
        const read = parked.get(id);
        if (lsn !== null && read !== undefined && (read === null || read < lsn)) parked.set(id, lsn);
      }
      this.parked = parked;
      this.parkedReadAt = Date.now();
    } catch (error) {
      // Acknowledged as before until the store answers: nothing is let go on a guess.
      this.deps.logger.warn({ err: error, stream: this.name }, 'cannot read the shared stream’s pipelines');
    }
  }

  /** Reads the source and routes each item to every reader, until none is left or the source fails. */
  private async pump(): Promise<void> {
    let source: Source | undefined;
    try {
      source = await this.deps.openSource();
      await this.refreshParked();
      let waits = 0;
      while (this.members.size > 0) {
        try {
          await this.stream(source);
          waits = 0;
        } catch (error) {
          // Restarted: the walsender of the session before may not have let the slot go yet.
          if (!slotInUse(error) || ++waits > SLOT_IN_USE_WAITS) throw error;
          await new Promise((resolve) => setTimeout(resolve, SLOT_IN_USE_WAIT_MS));
        }
      }
    } catch (error) {
      for (const member of this.members) member.fail(error);
      this.members.clear();
    } finally {
      this.upstream = undefined;
      await source?.close();
    }
  }

  /** One upstream session, from the smallest position of the readers, until a restart is wanted. */
  private async stream(source: Source): Promise<void> {
    let from: bigint | undefined;
    for (const member of this.members)
      if (from === undefined || member.position < from) from = member.position;
    this.restartWanted = false;
    this.awaitingRestart.clear();
    this.arriving.clear();
    this.inTransaction = false;
    this.relations.clear();
    this.delivered = from ?? 0n;
    const upstream = source.startStream(this.name, {
      from: from ?? 0n,
      logger: this.deps.logger,
      // A pipeline not reading yet may need what is before `from`: only acknowledgements count.
      acknowledgeFrom: false,
      // Large transactions are handed over as they arrive when a pipeline can hold one open.
      live: [...this.members].some((m) => m.live),
      ...(this.deps.spoolDir ? { spoolDir: this.deps.spoolDir } : {}),
      ...(this.deps.statusIntervalMs ? { statusIntervalMs: this.deps.statusIntervalMs } : {}),
    });
    this.upstream = upstream;
    this.deps.logger.debug({ stream: this.name, from: String(from) }, 'shared stream started');
    try {
      for (;;) {
        const items = await upstream.next();
        if (items === null) return;
        this.route(items);
        if (Date.now() - this.parkedReadAt > PARKED_REFRESH_MS) {
          this.parkedReadAt = Date.now();
          void this.refreshParked();
        }
        this.acknowledged();
        if (this.members.size === 0 || (this.restartWanted && !this.inTransaction)) return;
        await this.room();
      }
    } finally {
      this.upstream = undefined;
      await upstream.close();
    }
  }

  private route(items: StreamItem[]): void {
    let now: number | undefined;
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as StreamItem;
      switch (item.kind) {
        case 'begin':
          this.inTransaction = true;
          this.transactionCommitLsn = item.commitLsn;
          break;
        case 'relation':
          this.relations.set(item.relation.relationId, item.relation);
          break;
        case 'commit':
          this.committedAtMs = now ??= performance.now();
          this.inTransaction = false;
          if (item.endLsn > this.delivered) this.delivered = item.endLsn;
          break;
        case 'idle':
          if (item.walEnd > this.delivered) this.delivered = item.walEnd;
          break;
        case 'stream-change':
        case 'stream-relation':
          this.arriving.add(item.xid);
          break;
        case 'stream-abort':
          if (item.subxid === item.xid) this.arriving.delete(item.xid);
          break;
        case 'stream-commit': {
          this.arriving.delete(item.xid);
          if (item.endLsn > this.delivered) this.delivered = item.endLsn;
          // Replayed whole unless every pipeline that needs it delivered it; one waiting for a
          // restart gets it from the restarted stream.
          const verdict = item.verdict;
          const parts = [...this.members]
            .filter((member) => !this.awaitingRestart.has(member))
            .map((member) => member.streamCommit(item));
          void Promise.all(parts).then(
            (delivered) => verdict.settle(delivered.every(Boolean)),
            () => verdict.settle(false),
          );
          continue;
        }
      }
      for (const member of this.members) if (!this.awaitingRestart.has(member)) member.route(item);
    }
  }

  /**
   * Waits while a reader has a queue's worth waiting, for STALL_MS at most: a reader that takes
   * nothing for that long (its sink down, say) is let go of, so that it does not hold the others
   * back. It fails with StreamDetachedError, and reads again from its checkpoint when retried.
   */
  private room(): Promise<void> {
    const full = () => [...this.members].filter((m) => m.paces && !m.ended && m.queued >= HIGH_WATER);
    if (full().length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.onRoom = undefined;
        resolve();
      };
      const timer = setTimeout(() => {
        for (const member of full()) this.detach(member);
        done();
      }, STALL_MS);
      this.onRoom = () => {
        if (full().length === 0 || this.restartWanted) done();
      };
    });
  }

  private detach(member: StreamSubscription): void {
    this.deps.logger.warn(
      { pipelineId: member.pipelineId, queued: member.queued },
      'a pipeline took nothing from the shared stream for too long: it reads again from its checkpoint later',
    );
    member.fail(new StreamDetachedError(STALL_MS));
    void this.leave(member);
  }
}
