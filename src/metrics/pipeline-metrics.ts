import type { Histogram } from 'prom-client';
import type { PipelineStats } from '../runtime/pipeline-stats.js';

/** The histograms fed by each durable sink batch, labelled by pipeline name. */
export interface SinkBatchHistograms {
  batchEvents: Histogram<'pipeline'>;
  applySeconds: Histogram<'pipeline'>;
}

/**
 * Feeds the sink batch histograms from the pipelines' `onBatch` callbacks, and drops the series of
 * pipelines that no longer run here. The gauges and mirrored counters are read at scrape time
 * instead (see `pipeline-series.ts`): only the batch distribution has to be observed as it happens.
 */
export class SinkBatchObserver {
  private readonly observed = new Set<string>();

  constructor(private readonly histograms: SinkBatchHistograms) {}

  /** Observes every batch of `stats` under the pipeline `name`; for `supervisor.onStats`. */
  attach(name: string, stats: PipelineStats): void {
    // Buckets are shown from the start, so that rates over them exist before the first batch.
    if (!this.observed.has(name)) {
      this.histograms.batchEvents.zero({ pipeline: name });
      this.histograms.applySeconds.zero({ pipeline: name });
      this.observed.add(name);
    }
    stats.tellBatchesTo((events, seconds) => {
      this.observed.add(name);
      this.histograms.batchEvents.observe({ pipeline: name }, events);
      this.histograms.applySeconds.observe({ pipeline: name }, seconds);
    });
  }

  /** Removes the series of every observed pipeline not among `running`. */
  prune(running: Iterable<string>): void {
    const keep = new Set(running);
    for (const name of this.observed) {
      if (keep.has(name)) continue;
      this.histograms.batchEvents.remove({ pipeline: name });
      this.histograms.applySeconds.remove({ pipeline: name });
      this.observed.delete(name);
    }
  }
}
