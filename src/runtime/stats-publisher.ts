import type { PipelineState } from '../../machines/pipeline.js';
import type { LiveHub } from '../live/live-hub.js';
import { IDLE_STATS, type PipelineLiveStats } from '../pipelines/pipeline-view.js';
import { etaSeconds, percentOf } from '../pipelines/table-progress.js';
import { CopiedRowsSampler } from './copied-rows.js';
import type { PipelineReading } from './pipeline-handle.js';
import type { PipelinesView } from './pipeline-registry.js';
import type { PipelineStats } from './pipeline-stats.js';

/** Told of the figures of each pipeline this process takes on. */
export type StatsObserver = (
  pipeline: { id: string; name: string; projectId: string },
  stats: PipelineStats,
) => void;

/**
 * Shows what the pipelines this process runs are doing: their states and figures on the live feed
 * of their project, their figures to the metrics and to the API.
 */
export class StatsPublisher {
  /** Each pipeline's copy counts at its previous message, and when that was. */
  private readonly copied = new CopiedRowsSampler();
  private readonly sampledAt = new WeakMap<PipelineStats, number>();

  constructor(
    private readonly hub: LiveHub,
    private readonly handles: PipelinesView,
    /** The figures of pipelines other instances run. */
    private readonly fleet?: { of(pipelineId: string): PipelineLiveStats | undefined },
    /** Called with the figures of each pipeline this process takes on (metrics attach here). */
    private readonly onStats?: StatsObserver,
  ) {}

  /** A pipeline was taken on: its figures are handed to whoever observes them. */
  attach(handle: PipelineReading): void {
    this.onStats?.({ id: handle.id, name: handle.name, projectId: handle.projectId }, handle.stats);
  }

  /** Tells the feed at once of a state a pipeline's actor reached. */
  stateChanged(handle: PipelineReading, state: PipelineState, error: string | null): void {
    this.hub.publish(handle.projectId, { type: 'pipeline.state', name: handle.name, state, error });
    if (state === 'pending_schema_approval') {
      this.hub.publish(handle.projectId, {
        type: 'pipeline.schema',
        name: handle.name,
        proposal_id: null,
        status: 'pending',
      });
    }
  }

  /** Sends the figures of every pipeline whose project someone watches to the feed (called periodically). */
  publish(): void {
    for (const handle of this.handles.values()) {
      if (!this.hub.watched(handle.projectId)) continue;
      const live = handle.stats.live();
      const copying = [...handle.stats.tables]
        .filter(([, t]) => t.partitionsDone < t.partitionsTotal)
        .map(([table, t]) => ({
          table,
          partitions_total: t.partitionsTotal,
          partitions_done: t.partitionsDone,
          rows_total: Math.max(t.rowsTotal, t.rowsDone),
          rows_done: t.rowsDone,
          percent: percentOf(t.rowsDone, t.rowsTotal),
          eta_seconds: etaSeconds(t),
        }));
      this.hub.publish(handle.projectId, {
        type: 'pipeline.stats',
        name: handle.name,
        state: handle.state,
        phase: handle.stats.phase,
        events_per_second: live.eventsPerSecond,
        replication_lag_ms: live.replicationLagMs,
        replication_lag_bytes: live.replicationLagBytes,
        retained_wal_bytes: live.retainedWalBytes,
        last_checkpoint_at: handle.stats.lastCheckpointAt,
        copying,
        copy_rows_per_second: this.copyRate(handle.stats),
      });
    }
  }

  /**
   * Rows copied a second since the pipeline's previous message. Counted here, from the copy counts
   * themselves, so that a copy that starts and ends between two messages still shows its rows; the
   * first message after nobody watched has no previous one and says 0.
   */
  private copyRate(stats: PipelineStats): number {
    const now = performance.now();
    const rows = this.copied.since(stats);
    const previous = this.sampledAt.get(stats);
    this.sampledAt.set(stats, now);
    const seconds = previous === undefined ? 0 : (now - previous) / 1000;
    return seconds > 0 ? Math.round((rows / seconds) * 100) / 100 : 0;
  }

  /** The pipelines this process runs, with their state and figures, for metrics. */
  running(): { id: string; name: string; projectId: string; state: PipelineState; stats: PipelineStats }[] {
    return [...this.handles.values()].map(({ id, name, projectId, state, stats }) => ({
      id,
      name,
      projectId,
      state,
      stats,
    }));
  }

  /**
   * Live figures, state and last checkpoint of a pipeline this process runs; for another, the
   * figures its owner shares (idle when none).
   */
  stats(pipelineId: string): PipelineLiveStats {
    const handle = this.handles.get(pipelineId);
    if (!handle) return this.fleet?.of(pipelineId) ?? IDLE_STATS;
    return {
      ...handle.stats.live(),
      current: { state: handle.state, error: handle.error, lastCheckpointAt: handle.stats.lastCheckpointAt },
    };
  }

  statsOf(pipelineId: string): PipelineStats | undefined {
    return this.handles.get(pipelineId)?.stats;
  }
}
