import type { Phase } from '../../machines/pipeline.js';
import { CHANGE_OPS, type ChangeEvent, type ChangeOp } from '../core/change.js';
import type { ChangeStreamStats } from '../core/change-stream.js';
import { formatLsn } from '../core/lsn.js';
import type { SlotPosition } from '../core/source.js';
import type { PipelineLiveStats } from '../pipelines/pipeline-view.js';
import type { TableProgress } from '../pipelines/table-progress.js';
import { WalClock } from './wal-clock.js';

export type { TableProgress };

// Rates are measured over this window so a single large batch does not make the figure jump.
const RATE_WINDOW_MS = 5_000;

/** The source slot's figures, as last read. */
export interface SlotFigures {
  retainedWalBytes: number | null;
  walStatus: string | null;
}

/** What the pipeline's machine holds of a data plane: shown with its figures, kept only there. */
export interface ControlFigures {
  phase: Phase | 'idle';
  /** Failures in a row being retried; 0 once the data plane is healthy. */
  retries: number;
}

/** Told of a write the sink made durable: its size in events and how long it took. */
export type BatchListener = (events: number, seconds: number) => void;

export interface PipelineStatsOptions {
  /** Reads the pipeline's machine: the one place its phase and retry count are kept. */
  control?: () => ControlFigures;
  /** The last checkpoint's time as stored, before this process records one. */
  lastCheckpointAt?: string | null;
}

const IDLE_CONTROL: ControlFigures = { phase: 'idle', retries: 0 };

/**
 * What the data plane of one pipeline is doing, measured in this process. The figures the API
 * shows are read from here; what must survive a restart is handed to the store in `takeDeltas`.
 */
export class PipelineStats {
  #eventsTotal = 0;
  #sinkErrorsTotal = 0;
  #lastCheckpointAt: string | null;
  #lastCheckpointLsn: bigint | null = null;
  /** Commit time (ms) of the oldest transaction received but not yet durable in the sink. */
  private oldestPendingCommitMs: number | null = null;
  /** While streaming: the open change stream's counters. */
  private streamStats: (() => ChangeStreamStats) | null = null;
  /** Status updates that failed in the change streams closed in this process. */
  #closedStreamsFailedStatusUpdates = 0;
  readonly #tables = new Map<string, TableProgress>();
  readonly #eventsByOp: Record<ChangeOp, number> = { insert: 0, update: 0, delete: 0, truncate: 0 };
  #slot: SlotFigures | null = null;
  /** When the source wrote its WAL, for the lag of what is not durable yet, received or not. */
  private readonly wal = new WalClock();
  /** Acknowledged to the source in this run of the data plane (durable in the sink). */
  private acknowledgedLsn: bigint | null = null;
  /** What the slot said the pipeline acknowledged, at the last read of the source. */
  private confirmedLsn: bigint | null = null;
  /**
   * When the oldest change not yet durable was written, as the pipeline's previous owner measured
   * it (a restart, a take-over): it counts until this process dates that WAL itself.
   */
  private carriedSinceMs: number | null = null;
  // Each watcher of the pipeline (the slot, the source's tables) keeps its own warning.
  private readonly warnings = new Map<string, string>();
  private readonly control: () => ControlFigures;
  private readonly batchListeners: BatchListener[] = [];
  private progressListener: (() => void) | null = null;

  constructor(options: PipelineStatsOptions = {}) {
    this.control = options.control ?? (() => IDLE_CONTROL);
    this.#lastCheckpointAt = options.lastCheckpointAt ?? null;
  }

  /** What the data plane is doing, as the pipeline's machine holds it. */
  get phase(): Phase | 'idle' {
    return this.control().phase;
  }

  /** Failures in a row being retried (the machine's count); 0 once the data plane is healthy. */
  get retries(): number {
    return this.control().retries;
  }

  /** Events applied in this process. */
  get eventsTotal(): number {
    return this.#eventsTotal;
  }

  /** Batches the sink refused or failed, in this process. */
  get sinkErrorsTotal(): number {
    return this.#sinkErrorsTotal;
  }

  /**
   * Acknowledgements the source could not be told of, in this process: while none gets through,
   * the source keeps its WAL.
   */
  get statusUpdatesFailedTotal(): number {
    return this.#closedStreamsFailedStatusUpdates + (this.streamStats?.().failedStatusUpdates ?? 0);
  }

  /** When the sink last held a checkpoint durably (ISO time), this process or the stored one. */
  get lastCheckpointAt(): string | null {
    return this.#lastCheckpointAt;
  }

  /** The last checkpoint the sink holds durably, recorded in this process. */
  get lastCheckpointLsn(): bigint | null {
    return this.#lastCheckpointLsn;
  }

  /** Events applied in this process, by operation. */
  get eventsByOp(): Readonly<Record<ChangeOp, number>> {
    return this.#eventsByOp;
  }

  /** The tables being copied, by name (the snapshot's or a backfill's). */
  get tables(): ReadonlyMap<string, TableProgress> {
    return this.#tables;
  }

  /** The source slot as last read; null before the first read, or when it has none. */
  get slot(): SlotFigures | null {
    return this.#slot;
  }

  /** What a person should see (e.g. the slot keeps too much WAL, a table was dropped), or null. */
  get warning(): string | null {
    return this.warnings.size === 0 ? null : [...this.warnings.values()].join('; ');
  }

  /** Sets (or with null clears) the warning of one watcher, `about` naming it. */
  warn(about: 'slot' | 'tables', warning: string | null): void {
    if (warning === null) this.warnings.delete(about);
    else this.warnings.set(about, warning);
  }

  /** The data plane stopped: what it watched is not watched any more. */
  clearWarnings(): void {
    this.warnings.clear();
  }

  /** Every write the sink made durable is told to `listener`: its size in events and how long it took. */
  tellBatchesTo(listener: BatchListener): void {
    this.batchListeners.push(listener);
  }

  /**
   * From now on `listener` (the current run's, replacing the previous one) is told when the data
   * plane shows it is healthy: the sink durably took something (a batch, a snapshot partition), or
   * the stream caught up with nothing to apply.
   */
  tellProgressTo(listener: () => void): void {
    this.progressListener = listener;
  }

  /** Copying `table` began (a snapshot's or a backfill's), from the figures in `progress`. */
  copyStarted(table: string, progress: TableProgress): void {
    this.#tables.set(table, progress);
  }

  /** The oldest transaction received and not yet durable in the sink committed at `ms`; null: none. */
  oldestPendingCommit(ms: number | null): void {
    this.oldestPendingCommitMs = ms;
  }

  /**
   * The change stream opened: `streamStats` reads its counters, among them when the oldest
   * transaction the source is still sending began to arrive.
   */
  streamOpened(streamStats: () => ChangeStreamStats): void {
    this.streamStats = streamStats;
  }

  /** The change stream closed: nothing is arriving any more; its counts are kept. */
  streamClosed(): void {
    if (this.streamStats) this.#closedStreamsFailedStatusUpdates += this.streamStats().failedStatusUpdates;
    this.streamStats = null;
  }

  /** The source's slot was read: what it keeps of the WAL and in what state. */
  slotRead(slot: SlotFigures | null): void {
    this.#slot = slot && { retainedWalBytes: slot.retainedWalBytes, walStatus: slot.walStatus };
  }

  private applied: { at: number; events: number }[] = [];
  /** Events of pieces of the transaction being applied, not counted yet (see recordPiece). */
  private readonly piecesByOp: Record<ChangeOp, number> = { insert: 0, update: 0, delete: 0, truncate: 0 };
  private piecesEvents = 0;
  private pendingSave = { events: 0, sinkErrors: 0, checkpoint: false };

  /** A batch became durable in the sink, after `seconds` of writing. */
  recordApplied(changes: readonly ChangeEvent[], checkpointLsn: bigint, seconds = 0, now = Date.now()): void {
    // Indexed: a for-of here made an iterator result per change.
    for (let i = 0; i < changes.length; i++) this.#eventsByOp[(changes[i] as ChangeEvent).op]++;
    this.count(changes.length);
    this.recordWrite(changes.length, seconds, now);
    this.recordCheckpoint(checkpointLsn, now);
  }

  /**
   * A piece of a transaction too large for one batch became durable in the sink, under the
   * previous checkpoint. Its events are counted when the transaction's commit is durable
   * (countPieces), not now: a stop or a crash before that replays the transaction whole, pieces
   * included, and the events counted for them would be counted again. The stored total is thus
   * only ever added what a checkpoint made durable, whatever the crash point.
   */
  recordPiece(changes: readonly ChangeEvent[], seconds = 0, now = Date.now()): void {
    for (let i = 0; i < changes.length; i++) this.piecesByOp[(changes[i] as ChangeEvent).op]++;
    this.piecesEvents += changes.length;
    this.recordWrite(changes.length, seconds, now);
    this.madeProgress();
  }

  /** The transaction whose pieces were recorded is durable whole: its events count now. */
  countPieces(): void {
    for (const op of CHANGE_OPS) {
      this.#eventsByOp[op] += this.piecesByOp[op];
      this.piecesByOp[op] = 0;
    }
    this.count(this.piecesEvents);
    this.piecesEvents = 0;
  }

  /** The transaction whose pieces were recorded will be replayed whole: they are not counted. */
  dropPieces(): void {
    for (const op of CHANGE_OPS) this.piecesByOp[op] = 0;
    this.piecesEvents = 0;
  }

  /** The sink holds everything up to `lsn` durably: after a batch, or when a snapshot completed. */
  recordCheckpoint(lsn: bigint, now = Date.now()): void {
    this.acknowledged(lsn);
    this.#lastCheckpointLsn = lsn;
    this.#lastCheckpointAt = new Date(now).toISOString();
    this.pendingSave.checkpoint = true;
    this.madeProgress();
  }

  /** The sink durably took something: what a failing pipeline needs to count as healthy again. */
  madeProgress(): void {
    this.progressListener?.();
  }

  /**
   * The stream caught up with the source, the sink open and nothing waiting for it: healthy too,
   * for a pipeline whose source is idle. Never said while a batch waits or fails, so a batch
   * refused at every attempt does not count.
   */
  caughtUp(): void {
    this.progressListener?.();
  }

  /** The sink refused or failed a batch. */
  recordSinkError(): void {
    this.#sinkErrorsTotal++;
    this.pendingSave.sinkErrors++;
  }

  eventsPerSecond(now = Date.now()): number {
    this.trim(now);
    const events = this.applied.reduce((sum, a) => sum + a.events, 0);
    return Math.round((events / (RATE_WINDOW_MS / 1000)) * 100) / 100;
  }

  /** Everything up to `lsn` is durable in the sink, and acknowledged to the source. */
  acknowledged(lsn: bigint): void {
    if (this.acknowledgedLsn === null || lsn > this.acknowledgedLsn) this.acknowledgedLsn = lsn;
  }

  /** The data plane ended: what it acknowledged is the slot's to tell from now on. */
  endRun(): void {
    this.acknowledgedLsn = null;
  }

  /**
   * The source's WAL ended at `walEnd` at `atMs` (this process's clock), and the pipeline's slot
   * stood at `slot` (null: it has none).
   */
  observeSource(walEnd: bigint, atMs: number, slot: SlotPosition | null): void {
    this.confirmedLsn = slot?.confirmedLsn ?? null;
    const durable = this.durableLsn();
    if (this.carriedSinceMs !== null && this.wal.end() === null && durable !== null && walEnd > durable) {
      // The WAL just after the durable position was written when the previous owner said.
      this.wal.observe(durable + 1n, this.carriedSinceMs);
    }
    this.carriedSinceMs = null;
    this.wal.observe(walEnd, atMs);
    this.slotRead(slot);
  }

  /** The pipeline's previous owner measured its oldest change not yet durable as written at `sinceMs`. */
  carryLag(sinceMs: number): void {
    this.carriedSinceMs = sinceMs;
  }

  /** The source is not watched any more (the pipeline stopped): its figures are unknown. */
  forgetSource(): void {
    this.carriedSinceMs = null;
    this.wal.clear();
    this.confirmedLsn = null;
    this.#slot = null;
  }

  /** Where the sink is durable, as far as this process knows; null when it cannot tell. */
  durablePosition(): bigint | null {
    return this.durableLsn();
  }

  private durableLsn(): bigint | null {
    const acknowledged = this.acknowledgedLsn;
    const confirmed = this.confirmedLsn;
    if (acknowledged === null) return confirmed;
    return confirmed === null || acknowledged > confirmed ? acknowledged : confirmed;
  }

  /**
   * How long the oldest source change not yet durable in the sink has existed; 0 when the sink
   * holds everything. Two measures, the larger taken: the commit time of the oldest transaction
   * received and not durable (or the time a transaction still arriving began to), exact; and the
   * age of the WAL the source wrote after the durable position (WalClock), which counts what the
   * pipeline has not received: paused, held, its sink down, its stream behind.
   */
  lagMs(now = Date.now()): number {
    const applying = this.oldestPendingCommitMs;
    const arriving = this.streamStats?.().arrivingSinceMs ?? null;
    const oldest = applying === null ? arriving : arriving === null ? applying : Math.min(applying, arriving);
    const received = oldest === null ? 0 : Math.max(0, now - oldest);
    const durable = this.durableLsn();
    const written = durable === null ? 0 : this.wal.ageAfter(durable, now);
    // Not read from the source yet: the previous owner's measure holds.
    const carried = this.carriedSinceMs === null ? 0 : Math.max(0, now - this.carriedSinceMs);
    return Math.max(received, written, carried);
  }

  /** Source WAL written after what the sink holds durably, in bytes; null when not measured. */
  lagBytes(): number | null {
    const end = this.wal.end();
    const durable = this.durableLsn();
    if (end === null || durable === null) return null;
    return end > durable ? Number(end - durable) : 0;
  }

  live(now = Date.now()): PipelineLiveStats {
    return {
      eventsPerSecond: this.eventsPerSecond(now),
      replicationLagMs: this.lagMs(now),
      replicationLagBytes: this.lagBytes(),
      retainedWalBytes: this.slot?.retainedWalBytes ?? null,
      warning: this.warning,
    };
  }

  /** Counts not yet handed to the store, to add to the stored totals. */
  unsaved(): { events: number; sinkErrors: number } {
    return { events: this.pendingSave.events, sinkErrors: this.pendingSave.sinkErrors };
  }

  /** What happened since the last call, for the store; resets the counters it returns. */
  takeDeltas() {
    const deltas = {
      events: this.pendingSave.events,
      sinkErrors: this.pendingSave.sinkErrors,
      checkpointLsn:
        this.pendingSave.checkpoint && this.#lastCheckpointLsn !== null
          ? formatLsn(this.#lastCheckpointLsn)
          : null,
      checkpointAt: this.pendingSave.checkpoint ? this.#lastCheckpointAt : null,
    };
    this.pendingSave = { events: 0, sinkErrors: 0, checkpoint: false };
    return deltas;
  }

  /** Hands back what the store could not take, to go with the next call of `takeDeltas`. */
  giveBack(deltas: ReturnType<PipelineStats['takeDeltas']>): void {
    this.pendingSave.events += deltas.events;
    this.pendingSave.sinkErrors += deltas.sinkErrors;
    if (deltas.checkpointLsn !== null) this.pendingSave.checkpoint = true;
  }

  private count(events: number): void {
    this.#eventsTotal += events;
    this.pendingSave.events += events;
  }

  /** The sink wrote `events` events in `seconds`: for the rate and the batch figures. */
  private recordWrite(events: number, seconds: number, now: number): void {
    for (const listener of this.batchListeners) listener(events, seconds);
    this.applied.push({ at: now, events });
    this.trim(now);
  }

  private trim(now: number): void {
    while (this.applied.length > 0 && (this.applied[0] as { at: number }).at < now - RATE_WINDOW_MS) {
      this.applied.shift();
    }
  }
}
