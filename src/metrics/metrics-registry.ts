import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { SinkBatchObserver } from './pipeline-metrics.js';
import { type PipelineSource, pipelineSeries, type SeriesReader } from './pipeline-series.js';
import { VerificationMetrics } from './verification-metrics.js';

/** Labels of the HTTP metrics; `route` is the route pattern, never the raw URL. */
export type HttpLabel = 'method' | 'route' | 'status';

/** The metrics the HTTP hook records. */
export interface HttpMetrics {
  requests: Counter<HttpLabel>;
  durationSeconds: Histogram<HttpLabel>;
}

/** Every metric of one service instance, on a registry of its own. */
export interface ServiceMetrics {
  /** Serves `/metrics`: `registry.metrics()` with `registry.contentType`. */
  registry: Registry;
  http: HttpMetrics;
  /** Attach each pipeline's figures here (`supervisor.onStats`) to feed the sink histograms. */
  sinkBatches: SinkBatchObserver;
  verifications: VerificationMetrics;
}

/** Default Node.js metrics removed: `nodejs_active_handles{type}` etc. carry the same figures. */
const GAUGES_NAMED_TOTAL = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

const HTTP_SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A batch holds up to `batch_max_events` (at most 1,000,000) events.
const BATCH_EVENTS_BUCKETS = [1, 10, 50, 100, 500, 1_000, 5_000, 10_000, 50_000, 100_000, 1_000_000];
const APPLY_SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Creates the registry of one service instance and defines every metric on it, once, with its
 * help text. Pipeline gauges and the counters mirrored from the pipelines' figures are computed
 * at scrape time from `pipelines` (the pipelines this process runs), so the series of a pipeline
 * that stopped or moved elsewhere disappear. Node.js and process metrics carry their standard
 * names, without a prefix, like the HTTP ones.
 */
export function createServiceMetrics(pipelines: PipelineSource): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  // Gauges named `_total` fail `promtool check metrics`; each is the sum of a per-type gauge kept.
  for (const name of GAUGES_NAMED_TOTAL) registry.removeSingleMetric(name);

  const http: HttpMetrics = {
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    durationSeconds: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time taken to answer HTTP requests, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_SECONDS_BUCKETS,
      registers,
    }),
  };

  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    read: SeriesReader<L>,
  ) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of read(pipelines(), Date.now())) this.set(s.labels, s.value);
      },
    });
  // A counter mirroring a running total of the pipeline's figures: reset, then set to that total.
  const counter = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    read: SeriesReader<L>,
  ) =>
    new Counter<L>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of read(pipelines(), Date.now())) this.inc(s.labels, s.value);
      },
    });

  const p = ['pipeline'] as const;
  const pt = ['pipeline', 'table'] as const;
  const s = pipelineSeries;
  gauge(
    'replicator_pipeline_state',
    'Pipeline state: 1 for the current state, 0 for the others.',
    ['pipeline', 'state'],
    s.state,
  );
  counter(
    'replicator_pipeline_events_total',
    'Change events applied to the sink by this process since the pipeline started here, by operation.',
    ['pipeline', 'op'],
    s.eventsTotal,
  );
  gauge(
    'replicator_pipeline_events_per_second',
    'Change events applied per second (5 s window).',
    p,
    s.eventsPerSecond,
  );
  gauge(
    'replicator_pipeline_replication_lag_seconds',
    'Age of the oldest source change not yet durable in the sink, received or not (paused, held, sink down); 0 when caught up.',
    p,
    s.lagSeconds,
  );
  gauge(
    'replicator_pipeline_replication_lag_bytes',
    "Source WAL written after the position the sink holds durably (the source's WAL end minus the pipeline's acknowledged position).",
    p,
    s.lagBytes,
  );
  gauge(
    'replicator_pipeline_last_checkpoint_timestamp_seconds',
    'Unix time of the last checkpoint written with the data in this process.',
    p,
    s.lastCheckpointSeconds,
  );
  counter(
    'replicator_pipeline_sink_errors_total',
    'Sink batches that failed in this process since the pipeline started here.',
    p,
    s.sinkErrorsTotal,
  );
  counter(
    'replicator_pipeline_source_status_updates_failed_total',
    'Acknowledgements the source could not be sent in this process since the pipeline started here; while none gets through, the source keeps its WAL.',
    p,
    s.sourceStatusUpdatesFailedTotal,
  );
  gauge(
    'replicator_pipeline_retries',
    'Failures in a row of the data plane being retried (a server out of reach, a failed batch); 0 once it is healthy again.',
    p,
    s.retries,
  );
  // Not `_total`: that suffix is for counters, and these can go down when a table is copied again.
  gauge(
    'replicator_pipeline_snapshot_rows_done',
    'Rows of the table copied by the snapshot.',
    pt,
    s.snapshotRowsDone,
  );
  gauge(
    'replicator_pipeline_snapshot_rows_planned',
    "Rows of the table to copy (an estimate from the source's statistics until the copy ends).",
    pt,
    s.snapshotRowsPlanned,
  );
  gauge(
    'replicator_pipeline_snapshot_partitions_done',
    'Snapshot partitions of the table copied.',
    pt,
    s.snapshotPartitionsDone,
  );
  gauge(
    'replicator_pipeline_snapshot_partitions_planned',
    'Snapshot partitions the table is split into.',
    pt,
    s.snapshotPartitionsPlanned,
  );
  gauge(
    'replicator_pipeline_slot_retained_wal_bytes',
    "WAL the source keeps for the pipeline's replication slot, in bytes.",
    p,
    s.slotRetainedWalBytes,
  );
  gauge(
    'replicator_pipeline_slot_wal_status',
    "The replication slot's wal_status on the source: 1 for the current one, 0 for the others.",
    ['pipeline', 'status'],
    s.slotWalStatus,
  );

  const prune = (): void => sinkBatches.prune(pipelines().map((pipeline) => pipeline.name));
  const sinkBatches = new SinkBatchObserver({
    batchEvents: new Histogram({
      name: 'replicator_pipeline_sink_batch_events',
      help: 'Change events per batch made durable in the sink.',
      labelNames: p,
      buckets: BATCH_EVENTS_BUCKETS,
      registers,
      collect: prune,
    }),
    applySeconds: new Histogram({
      name: 'replicator_pipeline_sink_apply_duration_seconds',
      help: 'Time the sink took to apply and commit a batch, checkpoint included.',
      labelNames: p,
      buckets: APPLY_SECONDS_BUCKETS,
      registers,
      collect: prune,
    }),
  });
  return { registry, http, sinkBatches, verifications: new VerificationMetrics(registry) };
}
