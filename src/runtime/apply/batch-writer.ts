import type { ChangeEvent } from '../../core/change.js';
import type { ChangeBatch, Sink } from '../../core/sink.js';
import type { PendingCommits } from '../pending-commits.js';
import type { PipelineStats } from '../pipeline-stats.js';

export interface BatchWriterOptions {
  sink: Sink;
  /** Fencing epoch of this worker, sent with every batch. */
  epoch: number;
  /** The durable position the stream starts after. */
  startLsn: bigint;
  /** Tells the source that everything up to `lsn` is durable. */
  ack(lsn: bigint): void;
  stats: PipelineStats;
  /** The commit times not durable yet: told when a write starts and ends. */
  commits: PendingCommits;
  /** Called when the write under way ends, durable or failed. */
  onWriteEnded(): void;
}

/**
 * Writes batches to the sink and acknowledges to the source only what is durable. At most one
 * write is under way in the background; a position that became safe during it (an idle position,
 * a commit with nothing left to write) is acknowledged once it is durable. A write's failure is
 * kept, to be thrown by the applier. Also keeps the count of a transaction written in pieces:
 * its events count once its commit is durable, so that a replay does not count them twice.
 */
export class BatchWriter {
  private durable: bigint;
  private writing: Promise<void> | null = null;
  private failure: { error: unknown } | null = null;
  /** A position past the write under way, to acknowledge once it is durable. */
  private ackAfterWrite: bigint | null = null;
  /** Pieces of the open transaction written and not counted yet. */
  private pieces = false;
  /** Once the transaction of the pieces committed, the position whose write makes it durable. */
  private piecesCountAt: bigint | null = null;

  constructor(private readonly options: BatchWriterOptions) {
    this.durable = options.startLsn;
  }

  /** Everything up to it is durable and acknowledged. */
  get durableLsn(): bigint {
    return this.durable;
  }

  /** Whether a write is under way. */
  get busy(): boolean {
    return this.writing !== null;
  }

  /** Whether a write failed: the applier stops with its error. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** Whether pieces of a transaction were written and its commit is not durable yet. */
  get piecesHeld(): boolean {
    return this.pieces;
  }

  /** Throws the error of a failed write. */
  throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Starts writing committed transactions in the background, to acknowledge `position` once durable. */
  start(changes: ChangeEvent[], position: bigint): void {
    this.options.commits.writeStarted();
    this.writing = this.writeInBackground(changes, position);
  }

  /** Waits for the write under way; its failure is thrown. */
  async settle(): Promise<void> {
    if (this.writing) await this.writing;
    this.throwIfFailed();
  }

  /** Writes committed transactions now and acknowledges `position`; no write may be under way. */
  async write(changes: ChangeEvent[], position: bigint): Promise<void> {
    this.options.commits.writeStarted();
    await this.apply(changes, position);
    this.options.commits.writeEnded();
    this.acknowledge(position);
  }

  /**
   * Writes a piece of the open transaction under the durable position: a crash before its commit
   * is durable replays it whole.
   */
  async writePiece(changes: ChangeEvent[]): Promise<void> {
    await this.apply(changes, this.durable, true);
  }

  /** Writes changes under the durable position, acknowledging nothing (a backfill's held changes). */
  async writeAtDurable(changes: ChangeEvent[]): Promise<void> {
    await this.apply(changes, this.durable);
  }

  /**
   * The open transaction committed at `endLsn`: with `waiting`, changes wait in the batch to carry
   * its position; otherwise all of it is in the sink already (in pieces, if any) and its position
   * is durable once the write under way is.
   */
  committed(endLsn: bigint, waiting: boolean): void {
    if (waiting) {
      if (this.pieces) this.piecesCountAt = endLsn;
      return;
    }
    if (this.pieces) this.countPieces();
    this.ackWhenDurable(endLsn);
  }

  /**
   * Acknowledges a position nothing waits before: now when no write is under way (true), else
   * once it is durable (false).
   */
  ackWhenDurable(lsn: bigint): boolean {
    if (this.writing) {
      this.ackAfterWrite = lsn;
      return false;
    }
    this.acknowledge(lsn);
    return true;
  }

  /** Waits for the write under way to end, whatever its outcome; pieces not counted are dropped (replayed whole). */
  async close(): Promise<void> {
    await this.writing;
    this.options.stats.dropPieces();
  }

  // Everything after the write runs in one step: a position noted meanwhile cannot slip in
  // between its acknowledgements and the end of the write.
  private async writeInBackground(changes: ChangeEvent[], position: bigint): Promise<void> {
    try {
      await this.apply(changes, position);
      this.acknowledge(position);
      // A position noted during the write lies after everything written and before anything gathered since.
      if (this.ackAfterWrite !== null) this.acknowledge(this.ackAfterWrite);
      this.ackAfterWrite = null;
    } catch (error) {
      this.failure = { error };
    } finally {
      this.writing = null;
      this.options.commits.writeEnded();
      this.options.onWriteEnded();
    }
  }

  /** Writes `changes` with the checkpoint `position`; a piece of the open transaction with `piece`. */
  private async apply(changes: ChangeEvent[], position: bigint, piece = false): Promise<void> {
    const { sink, stats } = this.options;
    const started = performance.now();
    try {
      await sink.applyBatch(this.batchOf(changes, position));
    } catch (error) {
      stats.recordSinkError();
      throw error;
    }
    const seconds = (performance.now() - started) / 1000;
    if (piece) {
      stats.recordPiece(changes, seconds);
      this.pieces = true;
      return;
    }
    stats.recordApplied(changes, position, seconds);
    if (this.piecesCountAt !== null && position >= this.piecesCountAt) this.countPieces();
  }

  /** The batch the sink gets: made here alone. */
  private batchOf(changes: ChangeEvent[], position: bigint): ChangeBatch {
    return { changes, commitLsn: position, epoch: this.options.epoch };
  }

  private countPieces(): void {
    this.options.stats.countPieces();
    this.pieces = false;
    this.piecesCountAt = null;
  }

  private acknowledge(lsn: bigint): void {
    if (lsn <= this.durable) return;
    this.durable = lsn;
    this.options.ack(lsn);
  }
}
