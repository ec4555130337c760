import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { installHttpMetrics, UNMATCHED_ROUTE } from '../../src/metrics/http-metrics.js';
import { createServiceMetrics } from '../../src/metrics/metrics-registry.js';
import type { PipelineSample } from '../../src/metrics/pipeline-series.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { seriesValue } from '../support/metrics-text.js';

const insert = { op: 'insert' } as ChangeEvent;

describe('service metrics registry', () => {
  it('computes pipeline series at scrape time and drops those of pipelines gone', async () => {
    const running: PipelineSample[] = [];
    const metrics = createServiceMetrics(() => running);
    const stats = new PipelineStats();
    metrics.sinkBatches.attach('orders', stats);
    running.push({ name: 'orders', state: 'running', stats });
    stats.recordApplied([insert, insert, insert], 0x10n, 0.02);

    let text = await metrics.registry.metrics();
    expect(seriesValue(text, 'replicator_pipeline_state{pipeline="orders",state="running"}')).toBe(1);
    expect(seriesValue(text, 'replicator_pipeline_state{pipeline="orders",state="failed"}')).toBe(0);
    expect(seriesValue(text, 'replicator_pipeline_events_total{pipeline="orders",op="insert"}')).toBe(3);
    expect(seriesValue(text, 'replicator_pipeline_sink_batch_events_count{pipeline="orders"}')).toBe(1);
    expect(seriesValue(text, 'replicator_pipeline_sink_batch_events_sum{pipeline="orders"}')).toBe(3);
    expect(
      seriesValue(
        text,
        'replicator_pipeline_sink_apply_duration_seconds_bucket{le="0.025",pipeline="orders"}',
      ),
    ).toBe(1);
    expect(text).toContain('# TYPE replicator_pipeline_events_total counter');
    expect(
      seriesValue(text, 'replicator_pipeline_source_status_updates_failed_total{pipeline="orders"}'),
    ).toBe(0);
    expect(text).toContain('# TYPE replicator_pipeline_source_status_updates_failed_total counter');
    expect(text).toContain('process_cpu_seconds_total');

    // Mirrored counters follow the figures, not add them up scrape after scrape.
    stats.recordApplied([insert], 0x11n, 0.001);
    text = await metrics.registry.metrics();
    expect(seriesValue(text, 'replicator_pipeline_events_total{pipeline="orders",op="insert"}')).toBe(4);

    running.length = 0;
    text = await metrics.registry.metrics();
    expect(text).not.toContain('pipeline="orders"');
  });

  it('gives each service instance its own registry', async () => {
    const a = createServiceMetrics(() => []);
    const b = createServiceMetrics(() => []);
    a.http.requests.inc({ method: 'GET', route: '/x', status: '200' });
    expect(await a.registry.getSingleMetricAsString('http_requests_total')).toContain('route="/x"');
    expect(await b.registry.getSingleMetricAsString('http_requests_total')).not.toContain('route="/x"');
  });

  it('labels requests with the route pattern, and every unknown URL with one value', async () => {
    const metrics = createServiceMetrics(() => []);
    const app = Fastify();
    installHttpMetrics(app, metrics.http);
    app.get('/v1/pipelines/:name', async () => ({ ok: true }));
    await app.inject('/v1/pipelines/a');
    await app.inject('/v1/pipelines/b');
    await app.inject('/nope/1');
    await app.inject('/nope/2');
    const text = await metrics.registry.metrics();
    expect(
      seriesValue(text, 'http_requests_total{method="GET",route="/v1/pipelines/:name",status="200"}'),
    ).toBe(2);
    expect(
      seriesValue(text, `http_requests_total{method="GET",route="${UNMATCHED_ROUTE}",status="404"}`),
    ).toBe(2);
    expect(text).not.toContain('/nope');
    expect(
      seriesValue(
        text,
        'http_request_duration_seconds_count{method="GET",route="/v1/pipelines/:name",status="200"}',
      ),
    ).toBe(2);
    await app.close();
  });
});
