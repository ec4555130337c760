import type { DatabasePool } from 'slonik';
import type { Logger } from '../log/logger.js';
import { HISTORY_KEEP_MS, HISTORY_RESOLUTION_S } from '../pipelines/history-resolution.js';
import { type HistoryPoint, pipelineHistoryStore } from '../store/pipeline-history-store.js';
import { CopiedRowsSampler } from './copied-rows.js';
import type { PipelinesView } from './pipeline-registry.js';

const PRUNE_EVERY_MS = 3_600_000;

interface Window {
  samples: number;
  events: number;
  /** Rows copied in the window's seconds (snapshot or backfill, all tables). */
  copiedRows: number;
  lagMs: number;
  lagBytes: number | null;
  errorsAtStart: number;
}

/**
 * Keeps the figures of the pipelines this process runs over time, in every state (a paused or held
 * pipeline's lag grows in it): sampled each second, written every 10 s as one point a pipeline
 * (the peak lag and mean throughput of the window, events and rows copied), pruned after 48 hours.
 */
export class FigureHistory {
  private readonly windows = new Map<string, Window>();
  /** Each pipeline's copy counts at the previous second. */
  private readonly copied = new CopiedRowsSampler();
  private secondsInWindow = 0;
  private lastPrune = 0;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly pool: DatabasePool,
    private readonly handles: PipelinesView,
    private readonly logger: Logger,
  ) {}

  /** Called every second. */
  sample(now = Date.now()): void {
    for (const handle of this.handles.values()) {
      const live = handle.stats.live(now);
      const window = this.windows.get(handle.id) ?? {
        samples: 0,
        events: 0,
        copiedRows: 0,
        lagMs: 0,
        lagBytes: null,
        errorsAtStart: handle.stats.sinkErrorsTotal,
      };
      window.samples++;
      window.events += live.eventsPerSecond;
      window.copiedRows += this.copied.since(handle.stats);
      window.lagMs = Math.max(window.lagMs, live.replicationLagMs);
      if (live.replicationLagBytes !== null)
        window.lagBytes = Math.max(window.lagBytes ?? 0, live.replicationLagBytes);
      this.windows.set(handle.id, window);
    }
    if (++this.secondsInWindow < HISTORY_RESOLUTION_S) return;
    this.secondsInWindow = 0;
    const points: HistoryPoint[] = [];
    for (const [id, window] of this.windows) {
      const handle = this.handles.get(id);
      if (!handle) continue;
      points.push({
        pipelineId: id,
        state: handle.state,
        phase: handle.stats.phase,
        eventsPerSecond: Math.round((window.events / window.samples) * 100) / 100,
        copyRowsPerSecond: Math.round((window.copiedRows / window.samples) * 100) / 100,
        lagMs: window.lagMs,
        lagBytes: window.lagBytes,
        sinkErrors: Math.max(0, handle.stats.sinkErrorsTotal - window.errorsAtStart),
      });
    }
    this.windows.clear();
    const prune = now - this.lastPrune >= PRUNE_EVERY_MS;
    if (prune) this.lastPrune = now;
    // One write at a time: a slow store does not pile writes up.
    this.writing = this.writing
      .then(async () => {
        await pipelineHistoryStore.record(this.pool, points);
        if (prune) await pipelineHistoryStore.prune(this.pool, HISTORY_KEEP_MS);
      })
      .catch((error: unknown) => this.logger.warn({ err: error }, 'pipeline history not written'));
  }
}
