import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { seriesValue } from '../support/metrics-text.js';
import { promtoolCheckMetrics } from '../support/promtool.js';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0]!;

describe('GET /metrics', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const scrape = async () => {
    const res = await fetch(`${service.url}/metrics`);
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster.adminUrl, 'metrics');
    await sqlOn(
      dbs.source,
      `CREATE TABLE public.items (id integer PRIMARY KEY, name text);
       INSERT INTO public.items SELECT i, 'item ' || i FROM generate_series(1, 50) AS i;`,
    );
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'metered',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'dst', properties: { batch_max_wait_ms: '20' } },
    });
    expect(created.status).toBe(201);
  });
  afterAll(() => service?.stop());

  it('serves the pipeline, HTTP and process metrics in a format promtool accepts', async () => {
    expect((await service.request('PUT', '/v1/pipelines/metered/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/metered/progress')).body.phase === 'streaming',
      'streaming',
    );
    await sqlOn(
      dbs.source,
      `INSERT INTO public.items SELECT i, 'new ' || i FROM generate_series(51, 60) AS i;
       UPDATE public.items SET name = 'changed' WHERE id <= 5;
       DELETE FROM public.items WHERE id BETWEEN 6 AND 8;`,
    );
    await waitConverged(dbs.source, dbs.sink, 'public.items');
    const deleted = 'replicator_pipeline_events_total{pipeline="metered",op="delete"}';
    const { status, type, text } = (await waitFor(async () => {
      const s = await scrape();
      return (seriesValue(s.text, deleted) ?? 0) > 0 ? s : undefined;
    }, 'the applied changes to show in /metrics'))!;

    expect(status).toBe(200);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    const p = 'pipeline="metered"';
    expect(seriesValue(text, `replicator_pipeline_state{${p},state="running"}`)).toBe(1);
    expect(seriesValue(text, `replicator_pipeline_state{${p},state="failed"}`)).toBe(0);
    expect(seriesValue(text, `replicator_pipeline_events_total{${p},op="insert"}`)).toBe(10);
    expect(seriesValue(text, `replicator_pipeline_events_total{${p},op="update"}`)).toBe(5);
    expect(seriesValue(text, `replicator_pipeline_events_total{${p},op="delete"}`)).toBe(3);
    expect(seriesValue(text, `replicator_pipeline_events_total{${p},op="truncate"}`)).toBe(0);
    expect(seriesValue(text, `replicator_pipeline_replication_lag_seconds{${p}}`)).toBeGreaterThanOrEqual(0);
    expect(seriesValue(text, `replicator_pipeline_events_per_second{${p}}`)).toBeGreaterThanOrEqual(0);
    expect(seriesValue(text, `replicator_pipeline_sink_errors_total{${p}}`)).toBe(0);
    const checkpoint = seriesValue(text, `replicator_pipeline_last_checkpoint_timestamp_seconds{${p}}`) ?? 0;
    expect(Math.abs(checkpoint - Date.now() / 1000)).toBeLessThan(120);
    const table = `${p},table="public.items"`;
    expect(seriesValue(text, `replicator_pipeline_snapshot_rows_done{${table}}`)).toBe(50);
    expect(seriesValue(text, `replicator_pipeline_snapshot_partitions_done{${table}}`)).toBe(
      seriesValue(text, `replicator_pipeline_snapshot_partitions_planned{${table}}`),
    );
    expect(seriesValue(text, `replicator_pipeline_sink_batch_events_bucket{le="+Inf",${p}}`)).toBeGreaterThan(
      0,
    );
    expect(seriesValue(text, `replicator_pipeline_sink_batch_events_sum{${p}}`)).toBe(18);
    expect(seriesValue(text, `replicator_pipeline_sink_apply_duration_seconds_count{${p}}`)).toBeGreaterThan(
      0,
    );
    expect(text).toMatch(
      /^replicator_pipeline_sink_apply_duration_seconds_bucket\{le="0\.01",pipeline="metered"\} \d+$/m,
    );
    expect(
      seriesValue(
        text,
        'http_requests_total{method="GET",route="/v1/pipelines/:name/progress",status="200"}',
      ),
    ).toBeGreaterThan(0);
    expect(
      seriesValue(
        text,
        'http_request_duration_seconds_count{method="POST",route="/v1/connections",status="201"}',
      ),
    ).toBe(2);
    expect(text).not.toContain('route="/v1/pipelines/metered');
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);

    const check = promtoolCheckMetrics(text);
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
  });

  it('is documented in the OpenAPI document as text', async () => {
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.paths)).toContain('/metrics');
    expect(doc.paths['/metrics'].get.responses['200'].content).toHaveProperty('text/plain');
  });

  it('drops the series of a pipeline that stopped, and counts unknown routes as one', async () => {
    expect((await service.request('PUT', '/v1/pipelines/metered/state', { state: 'stop' })).status).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/metered')).body.state === 'stopped',
      'stopped',
    );
    await service.request('GET', '/no/such/route');
    await service.request('GET', '/v1/nothing/here');
    const { text } = (await waitFor(async () => {
      const s = await scrape();
      return s.text.includes('pipeline="metered"') ? undefined : s;
    }, 'the stopped pipeline to leave /metrics'))!;
    expect(seriesValue(text, 'http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(2);
    expect(text).not.toContain('/no/such/route');
    expect(promtoolCheckMetrics(text).status).toBe(0);
  });
});
