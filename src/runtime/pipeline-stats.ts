import type { Phase } from '../../machines/pipeline.js';
import type { ChangeEvent, ChangeOp } from '../core/change.js';
import type { PipelineLiveStats } from '../pipelines/pipeline-view.js';
import type { TableProgress } from '../pipelines/table-progress.js';

export type { TableProgress };

// Rates are measured over this window so a single large batch does not make the figure jump.
const RATE_WINDOW_MS = 5_000;

/**
 * What the data plane of one pipeline is doing, measured in this process. The figures the API
 * shows are read from here; what must survive a restart is handed to the store in `takeDeltas`.
 */
export class PipelineStats {
  phase: Phase | 'idle' = 'idle';
  eventsTotal = 0;
  sinkErrorsTotal = 0;
  lastCheckpointAt: string | null = null;
  lastCheckpointLsn: string | null = null;
  /** Commit time (ms) of the oldest transaction received but not yet durable in the sink. */
  oldestPendingCommitMs: number | null = null;
  readonly tables = new Map<string, TableProgress>();
  /** Events applied in this process, by operation. */
  readonly eventsByOp: Record<ChangeOp, number> = { insert: 0, update: 0, delete: 0, truncate: 0 };
  /** The source slot as last checked while streaming; null before the first check. */
  slot: { retainedWalBytes: number | null; walStatus: string | null } | null = null;
  /** Failures in a row being retried (the machine's count); 0 once the data plane is healthy. */
  retries = 0;
  /** A warning a person should see (e.g. the slot keeps too much WAL), or null. */
  warning: string | null = null;
  /** Told of every durable batch: its size in events and how long the sink took. */
  onBatch?: (events: number, seconds: number) => void;
  /**
   * Told when the data plane shows it is healthy: the sink durably took something (a batch, a
   * snapshot partition), or the stream caught up with nothing to apply.
   */
  onProgress?: () => void;
  private applied: { at: number; events: number }[] = [];
  private pendingSave = { events: 0, sinkErrors: 0, checkpoint: false };

  /** A batch became durable in the sink, after `seconds` of writing. */
  recordApplied(changes: readonly ChangeEvent[], checkpointLsn: string, seconds = 0, now = Date.now()): void {
    const events = changes.length;
    for (const change of changes) this.eventsByOp[change.op]++;
    this.onBatch?.(events, seconds);
    this.eventsTotal += events;
    this.pendingSave.events += events;
    this.recordCheckpoint(checkpointLsn, now);
    this.applied.push({ at: now, events });
    this.trim(now);
  }

  /** The sink holds everything up to `lsn` durably: after a batch, or when a snapshot completed. */
  recordCheckpoint(lsn: string, now = Date.now()): void {
    this.lastCheckpointLsn = lsn;
    this.lastCheckpointAt = new Date(now).toISOString();
    this.pendingSave.checkpoint = true;
    this.madeProgress();
  }

  /** The sink durably took something: what a failing pipeline needs to count as healthy again. */
  madeProgress(): void {
    this.onProgress?.();
  }

  /**
   * The stream caught up with the source, the sink open and nothing waiting for it: healthy too,
   * for a pipeline whose source is idle. Never said while a batch waits or fails, so a batch
   * refused at every attempt does not count.
   */
  caughtUp(): void {
    this.onProgress?.();
  }

  recordSinkError(): void {
    this.sinkErrorsTotal++;
    this.pendingSave.sinkErrors++;
  }

  eventsPerSecond(now = Date.now()): number {
    this.trim(now);
    const events = this.applied.reduce((sum, a) => sum + a.events, 0);
    return Math.round((events / (RATE_WINDOW_MS / 1000)) * 100) / 100;
  }

  /** Now minus the commit time of the oldest change not yet durable; 0 when caught up. */
  lagMs(now = Date.now()): number {
    return this.oldestPendingCommitMs === null ? 0 : Math.max(0, now - this.oldestPendingCommitMs);
  }

  live(now = Date.now()): PipelineLiveStats {
    return {
      eventsPerSecond: this.eventsPerSecond(now),
      replicationLagMs: this.lagMs(now),
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
      checkpointLsn: this.pendingSave.checkpoint ? this.lastCheckpointLsn : null,
      checkpointAt: this.pendingSave.checkpoint ? this.lastCheckpointAt : null,
    };
    this.pendingSave = { events: 0, sinkErrors: 0, checkpoint: false };
    return deltas;
  }

  private trim(now: number): void {
    while (this.applied.length > 0 && (this.applied[0] as { at: number }).at < now - RATE_WINDOW_MS) {
      this.applied.shift();
    }
  }
}
