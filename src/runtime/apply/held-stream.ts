import { type ChangeEvent, type TableSchema, tableKey, valueBytes } from '../../core/change.js';
import type { SourceRelation, StreamedItem } from '../../core/change-stream.js';
import type { HeldTransaction } from '../../core/held-transaction.js';
import type { Sink } from '../../core/sink.js';
import type { Logger } from '../../log/logger.js';
import type { PipelineStats } from '../pipeline-stats.js';
import { relationFits } from './streamed-relation.js';

export interface HeldStreamOptions {
  sink: Sink;
  /** Fencing epoch of this worker, checked at the commit. */
  epoch: number;
  stats: PipelineStats;
  logger: Logger;
  /** Changes of one piece written to the held transaction. */
  pieceEvents: number;
  /**
   * Bytes of change data (as a batch counts them) that end a piece before `pieceEvents` do: wide
   * rows would otherwise make a piece, and the two runs queued behind it, hold far more memory.
   */
  pieceBytes: number;
  /** Makes everything committed before now durable (a piece may touch rows it wrote). */
  flush(): Promise<void>;
  /**
   * The change as the sink takes it, null when it is not the sink's to apply, or 'fall back' when
   * it cannot go ahead of its commit (a backfill or a copy decides on its table).
   */
  route(change: ChangeEvent): ChangeEvent | null | 'fall back';
  /** The shape the sink writes a table in (see SchemaGuard.shapeFor). */
  shapeFor?(key: string): TableSchema | 'cut' | undefined;
  /** The transaction's commit is durable: acknowledge its end. */
  delivered(endLsn: bigint): void;
}

type Step =
  | { kind: 'apply'; changes: ChangeEvent[] }
  | { kind: 'savepoint'; subxid: number }
  | { kind: 'rollback'; subxid: number };

/** The streamed transaction being written while it arrives. */
interface Live {
  xid: number;
  opening: Promise<HeldTransaction>;
  /** Runs of steps under way or queued in the held transaction, oldest first (they run one at a time). */
  runs: Promise<void>[];
  failure: { error: unknown } | null;
  /** Steps waiting for the next run, in order, and the piece still gathering. */
  steps: Step[];
  piece: ChangeEvent[];
  /** The bytes of `piece`. */
  pieceBytes: number;
  /** Subtransactions with a savepoint. */
  subxids: Set<number>;
}

/**
 * Writes the streamed transaction the source hands over as it arrives into a sink transaction
 * held open until its Stream Commit (`core/held-transaction.ts`), next to the batches of the
 * transactions that commit meanwhile: at the source those cannot touch the rows it holds, and
 * each piece is written only once everything committed before its changes is durable, so the
 * two never wait for each other. Every change also waits in the source's spool: whatever is not
 * simple (a truncate, a new shape, a backfill or copy under way, a failure of the held
 * transaction) rolls it back and lets the source replay the transaction after its commit, as if
 * none of it had come early. A stop or crash loses the uncommitted transaction, which the source
 * sends again.
 */
export class HeldStream {
  private live: Live | undefined;
  /** The streamed transaction left to its replay, and the rollback of what it wrote. */
  private declined: { xid: number; rolledBack: Promise<void> } | undefined;
  /** The shapes the stream announced outside streamed transactions, by relation id. */
  private readonly seen = new Map<number, SourceRelation>();

  constructor(private readonly options: HeldStreamOptions) {}

  /** Takes in a streamed item; returns what to await when it must wait for the sink. */
  take(item: StreamedItem): Promise<void> | undefined {
    switch (item.kind) {
      case 'stream-change':
        return this.change(item.xid, item.change);
      case 'stream-relation':
        if (this.takes(item.xid) && !this.fits(item.relation)) this.fallBack(item.xid, 'a new table shape');
        return;
      case 'stream-abort':
        return this.abort(item.xid, item.subxid);
      case 'stream-commit':
        return this.commit(item.xid, item.endLsn).then((delivered) => item.verdict.settle(delivered));
    }
  }

  /** A shape announced outside streamed transactions, which a streamed one's shapes are compared with. */
  noteRelation(relation: SourceRelation): void {
    this.seen.set(relation.relationId, relation);
  }

  /**
   * Rolls back the transaction held, for its replay; resolves once it is rolled back. Called
   * before the sink's tables change (a backfill's reset, a schema change's ALTER): those would
   * wait for the row locks it holds, and it waits for them to be applied.
   */
  async fallBackNow(reason: string): Promise<void> {
    if (this.live) this.fallBack(this.live.xid, reason);
    await this.declined?.rolledBack;
  }

  /** Rolls back what is held (a stop: the source sends it again on the next start). */
  async close(): Promise<void> {
    const live = this.live;
    this.live = undefined;
    if (live) await this.rollBack(live);
    await this.declined?.rolledBack;
  }

  private takes(xid: number): boolean {
    return this.declined?.xid !== xid && (this.live === undefined || this.live.xid === xid);
  }

  private change(xid: number, arrived: ChangeEvent): Promise<void> | undefined {
    if (!this.takes(xid)) return;
    if (this.live?.failure) {
      this.fallBack(xid, 'the held transaction failed');
      return;
    }
    if (arrived.op === 'truncate') {
      this.fallBack(xid, 'a truncate');
      return;
    }
    const change = this.options.route(arrived);
    if (change === 'fall back') {
      this.fallBack(xid, 'a copy of the table is under way');
      return;
    }
    if (change === null) return;
    const live = this.live ?? this.open(xid);
    if (change.xid !== xid && !live.subxids.has(change.xid)) {
      // A subtransaction's first change: a rollback of it undoes everything from here.
      live.subxids.add(change.xid);
      this.seal(live);
      live.steps.push({ kind: 'savepoint', subxid: change.xid });
    }
    live.piece.push(change);
    live.pieceBytes += valueBytes(change);
    if (live.piece.length >= this.options.pieceEvents || live.pieceBytes >= this.options.pieceBytes)
      return this.write(live);
  }

  /** A rollback at the source; one of the whole transaction is awaited, so that the rows it held are free. */
  private abort(xid: number, subxid: number): Promise<void> | undefined {
    const live = this.live;
    if (subxid === xid && this.declined?.xid === xid) {
      const { rolledBack } = this.declined;
      this.declined = undefined;
      return rolledBack;
    }
    if (live?.xid !== xid) return;
    if (subxid === xid) {
      this.live = undefined;
      this.options.stats.dropPieces();
      return this.rollBack(live);
    }
    if (!live.subxids.has(subxid)) return;
    this.seal(live);
    live.steps.push({ kind: 'rollback', subxid });
  }

  /** At the Stream Commit: whether the transaction is durable in the sink, or is to be replayed. */
  private async commit(xid: number, endLsn: bigint): Promise<boolean> {
    const live = this.live;
    if (live?.xid !== xid) {
      // Replayed: what it wrote is rolled back first, or the replay would wait for its locks.
      if (this.declined?.xid === xid) await this.declined.rolledBack;
      this.declined = undefined;
      return false;
    }
    await this.write(live);
    await live.runs.at(-1);
    if (live.failure) {
      this.fallBack(xid, 'the held transaction failed');
      await this.declined?.rolledBack;
      this.declined = undefined;
      return false;
    }
    this.live = undefined;
    // Everything committed before it first, so that the checkpoint moves forward only.
    await this.options.flush();
    const held = await live.opening;
    const started = performance.now();
    try {
      await held.commit({ changes: [], commitLsn: endLsn, epoch: this.options.epoch });
    } catch (error) {
      this.options.stats.dropPieces();
      this.options.stats.recordSinkError();
      throw error;
    }
    const { stats } = this.options;
    this.options.logger.debug(
      { xid, commitMs: Math.round(performance.now() - started) },
      'a streamed transaction written while it arrived is committed',
    );
    stats.countPieces();
    stats.recordCheckpoint(endLsn);
    this.options.delivered(endLsn);
    return true;
  }

  private open(xid: number): Live {
    const opening = (this.options.sink.openHeldTransaction as () => Promise<HeldTransaction>)();
    // A failure to open is met by the first run.
    opening.catch(() => undefined);
    const live: Live = {
      xid,
      opening,
      runs: [],
      failure: null,
      steps: [],
      piece: [],
      pieceBytes: 0,
      subxids: new Set(),
    };
    this.live = live;
    this.options.logger.debug({ xid }, 'writing a streamed transaction while it arrives');
    return live;
  }

  /** The piece gathered so far joins the steps to run. */
  private seal(live: Live): void {
    if (live.piece.length === 0) return;
    live.steps.push({ kind: 'apply', changes: live.piece });
    live.piece = [];
    live.pieceBytes = 0;
  }

  /**
   * Queues the steps gathered, once what committed before them is durable: they run after those
   * queued before, and no more than two runs wait at a time (a piece or two are written while the
   * next one gathers and is decoded).
   */
  private async write(live: Live): Promise<void> {
    this.seal(live);
    if (live.steps.length === 0) return;
    await this.options.flush();
    while (live.runs.length >= 2) await live.runs[0];
    if (live.failure || this.live !== live) return;
    const steps = live.steps;
    live.steps = [];
    const run = (live.runs.at(-1) ?? Promise.resolve()).then(() => this.run(live, steps));
    live.runs.push(run);
    void run.then(() => live.runs.splice(live.runs.indexOf(run), 1));
  }

  private async run(live: Live, steps: Step[]): Promise<void> {
    const { stats } = this.options;
    try {
      const held = await live.opening;
      for (const step of steps) {
        if (live.failure) return;
        if (step.kind === 'apply') {
          const started = performance.now();
          await held.apply(step.changes);
          stats.recordPiece(step.changes, (performance.now() - started) / 1000);
        } else if (step.kind === 'savepoint') {
          await held.savepoint(step.subxid);
        } else {
          await held.rollbackTo(step.subxid);
        }
      }
    } catch (error) {
      live.failure ??= { error };
    }
  }

  private fits(relation: SourceRelation): boolean {
    return relationFits(
      relation,
      this.seen.get(relation.relationId),
      this.options.shapeFor?.(tableKey(relation)),
    );
  }

  /** Leaves the transaction held to its replay: what it wrote is rolled back. */
  private fallBack(xid: number, reason: string): void {
    const live = this.live;
    if (live?.xid !== xid) {
      // Nothing written yet: the transaction is only left to its replay.
      this.declined = { xid, rolledBack: Promise.resolve() };
      return;
    }
    this.live = undefined;
    const failure = live.failure?.error;
    this.options.logger.info(
      { xid: live.xid, reason, ...(failure ? { err: failure } : {}) },
      'a streamed transaction is applied after its commit instead',
    );
    this.options.stats.dropPieces();
    this.declined = { xid: live.xid, rolledBack: this.rollBack(live) };
  }

  /** Stops the runs and rolls back, after the statement under way (the connection runs one at a time). */
  private async rollBack(live: Live): Promise<void> {
    live.failure ??= { error: new Error('rolled back') };
    await live.runs.at(-1);
    const held = await live.opening.catch(() => undefined);
    await held?.abort();
  }
}
