import type { DatabasePool } from 'slonik';
import type { Logger } from '../log/logger.js';
import type { PipelineLiveStats } from '../pipelines/pipeline-view.js';
import { type Figures, pipelineFiguresStore } from '../store/pipeline-figures-store.js';
import type { PipelinesView } from './pipeline-registry.js';

/** Figures unchanged are stored again after this, so that a reader sees they are still measured. */
const REFRESH_MS = 10_000;

/**
 * Shares live figures across a fleet: the figures of the pipelines this instance runs go to the
 * store (when they changed, at most once a second), and those of the others are read back, so
 * that every instance answers the API with a pipeline's true lag, not only the one running it.
 */
export class FleetFigures {
  private readonly stored = new Map<string, { figures: Figures; at: number }>();
  private others = new Map<string, { figures: Figures; readAt: number }>();
  private syncing: Promise<void> | null = null;

  constructor(
    private readonly pool: DatabasePool,
    private readonly handles: PipelinesView,
    private readonly logger: Logger,
  ) {}

  /** Stores this instance's figures and reads the others'; a sync under way is waited for instead. */
  sync(): Promise<void> {
    this.syncing ??= this.run().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  /** The live figures of a pipeline another instance runs, as of now; undefined when none are stored. */
  of(pipelineId: string, now = Date.now()): PipelineLiveStats | undefined {
    const other = this.others.get(pipelineId);
    if (!other) return undefined;
    const { figures, readAt } = other;
    return {
      eventsPerSecond: figures.eventsPerSecond,
      // Behind when read: behind the more by the time since (the owner measures again meanwhile).
      replicationLagMs: figures.lagMs > 0 ? figures.lagMs + Math.max(0, now - readAt) : 0,
      replicationLagBytes: figures.lagBytes,
      retainedWalBytes: figures.retainedWalBytes,
      warning: null,
    };
  }

  private async run(): Promise<void> {
    const now = Date.now();
    const changed: Figures[] = [];
    for (const handle of this.handles.values()) {
      if (handle.state === 'stopped') continue;
      const live = handle.stats.live(now);
      const figures: Figures = {
        pipelineId: handle.id,
        lagMs: live.replicationLagMs,
        lagBytes: live.replicationLagBytes,
        retainedWalBytes: live.retainedWalBytes,
        eventsPerSecond: live.eventsPerSecond,
      };
      const last = this.stored.get(handle.id);
      if (last && now - last.at < REFRESH_MS && same(last.figures, figures, now - last.at)) continue;
      changed.push(figures);
    }
    for (const id of this.stored.keys()) if (!this.handles.has(id)) this.stored.delete(id);
    try {
      await pipelineFiguresStore.save(this.pool, changed);
      for (const figures of changed) this.stored.set(figures.pipelineId, { figures, at: now });
      const readAt = Date.now();
      const read = await pipelineFiguresStore.listLive(this.pool);
      this.others = new Map(
        read
          .filter((f) => !this.handles.has(f.pipelineId))
          .map((f) => [f.pipelineId, { figures: f, readAt }]),
      );
    } catch (error) {
      // The store being out of reach is said by the state recorder; the figures wait for it.
      this.logger.debug({ err: error }, 'could not share the live figures');
    }
  }
}

/** The same figures, a lag that grew only by the time since (it stays behind by as much) counting as the same. */
function same(before: Figures, now: Figures, elapsedMs: number): boolean {
  const lagAsExpected =
    before.lagMs === 0 ? now.lagMs === 0 : Math.abs(before.lagMs + elapsedMs - now.lagMs) < 1_000;
  return (
    lagAsExpected &&
    before.lagBytes === now.lagBytes &&
    before.retainedWalBytes === now.retainedWalBytes &&
    before.eventsPerSecond === now.eventsPerSecond
  );
}
