import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { seriesValue } from '../support/metrics-text.js';
import { availableBinDirs, createDatabase, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import { sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [shared] = inject('pgClusters');

interface Figures {
  state: string;
  lagMs: number;
  lagBytes: number | null;
  retained: number | null;
}

/**
 * Lag is measured against the source: a pipeline that does not receive what the source writes
 * (paused, held for review, its sink down) shows it growing second by second, and one that holds
 * everything shows 0. The source has a server of its own, so that nothing else writes WAL there.
 */
describe('lag against the source', { timeout: 240_000 }, () => {
  let source: PgCluster;
  let sourceUrl: string;
  let sinkUrl: string;
  let proxy: TcpProxy;
  let service: TestService;

  const api = (method: string, path: string, body?: unknown) => service.request(method, path, body);
  const figures = async (name: string): Promise<Figures> => {
    const { body } = await api('GET', `/v1/pipelines/${name}`);
    return {
      state: body.state,
      lagMs: body.replication_lag_ms,
      lagBytes: body.replication_lag_bytes,
      retained: body.retained_wal_bytes,
    };
  };
  const state = (name: string, to: string) => api('PUT', `/v1/pipelines/${name}/state`, { state: to });

  /** Waits until the lag reads 0 (bytes too): the sink holds everything the source wrote. */
  const caughtUp = (name: string) =>
    waitFor(async () => {
      const f = await figures(name);
      return f.lagMs === 0 && f.lagBytes === 0 ? f : undefined;
    }, `${name}: lag 0`);

  /** Waits until the lag has grown past `ms`, and then grows further between two reads. */
  async function growing(name: string, ms: number, expectedState: string): Promise<Figures> {
    const first = (await waitFor(async () => {
      const f = await figures(name);
      return f.lagMs >= ms ? f : undefined;
    }, `${name}: lag over ${ms} ms`)) as Figures;
    expect(first.state).toBe(expectedState);
    expect(first.lagBytes).toBeGreaterThan(0);
    const later = (await waitFor(async () => {
      const f = await figures(name);
      return f.lagMs > first.lagMs + 1_000 ? f : undefined;
    }, `${name}: lag growing`)) as Figures;
    expect(later.state).toBe(expectedState);
    expect(later.lagBytes).toBeGreaterThanOrEqual(first.lagBytes as number);
    return later;
  }

  async function pipeline(name: string, table: string, extra: Record<string, unknown> = {}) {
    await sqlOn(
      sourceUrl,
      `CREATE TABLE ${table} (id int PRIMARY KEY, v text);
       INSERT INTO ${table} SELECT g, 'seed' FROM generate_series(1, 50) g;`,
    );
    const created = await api('POST', '/v1/pipelines', {
      name,
      source: { connection: 'src', tables: [`public.${table}`] },
      sink: { connection: 'dst', properties: { batch_max_wait_ms: '20' } },
      ...extra,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await state(name, 'start')).status).toBe(200);
    await waitConverged(sourceUrl, sinkUrl, table);
  }

  beforeAll(async () => {
    const binaries = availableBinDirs()[0] as { binDir: string };
    source = await startPgCluster('lag-source', binaries.binDir);
    sourceUrl = await createDatabase(source.adminUrl, 'lag_src');
    const [store, sink] = await Promise.all([
      createDatabase(shared?.adminUrl as string, 'lag_store'),
      createDatabase(shared?.adminUrl as string, 'lag_dst'),
    ]);
    sinkUrl = sink;
    const proxied = new URL(sink);
    proxy = await TcpProxy.start(proxied.hostname, Number(proxied.port));
    proxied.port = String(proxy.listenPort);
    service = await startTestService({ ...testConfig(store), retryMaxDelayMs: 200 });
    for (const [name, dsn] of [
      ['src', sourceUrl],
      ['dst', proxied.toString()],
    ] as const) {
      expect((await api('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(201);
    }
  });

  afterAll(async () => {
    await service?.stop();
    await proxy?.stop();
    await source?.stop();
  });

  it('reads 0 for an idle source, in the API, the metrics and /metrics', async () => {
    await pipeline('idle', 'idle_items');
    const f = (await caughtUp('idle')) as Figures;
    expect(f.retained).toBeGreaterThanOrEqual(0);
    const metrics = (await api('GET', '/v1/pipelines/idle/metrics')).body;
    expect(metrics.replication_lag_seconds).toBe(0);
    expect(metrics.replication_lag_bytes).toBe(0);
    const text = await (await fetch(`${service.url}/metrics`)).text();
    expect(seriesValue(text, 'replicator_pipeline_replication_lag_bytes{pipeline="idle"}')).toBe(0);
    expect(seriesValue(text, 'replicator_pipeline_replication_lag_seconds{pipeline="idle"}')).toBe(0);
    expect(
      seriesValue(text, 'replicator_pipeline_slot_retained_wal_bytes{pipeline="idle"}'),
    ).toBeGreaterThanOrEqual(0);
  });

  it('grows while paused with writes at the source, and reads 0 once resumed and caught up', async () => {
    await pipeline('paused', 'paused_items');
    expect((await state('paused', 'pause')).status).toBe(200);
    await sqlOn(
      sourceUrl,
      `INSERT INTO paused_items SELECT g, 'while paused' FROM generate_series(51, 2050) g`,
    );
    const later = await growing('paused', 1_500, 'paused');
    const metrics = (await api('GET', '/v1/pipelines/paused/metrics')).body;
    expect(metrics.replication_lag_seconds * 1000).toBeGreaterThanOrEqual(later.lagMs);
    expect(metrics.replication_lag_bytes).toBeGreaterThan(0);
    const text = await (await fetch(`${service.url}/metrics`)).text();
    expect(
      seriesValue(text, 'replicator_pipeline_replication_lag_seconds{pipeline="paused"}'),
    ).toBeGreaterThan(1);
    expect(seriesValue(text, 'replicator_pipeline_replication_lag_bytes{pipeline="paused"}')).toBeGreaterThan(
      0,
    );
    // The live feed says it too, every second.
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}/v1/live`);
    const live: { replication_lag_ms: number; replication_lag_bytes: number | null; state: string }[] = [];
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'pipeline.stats' && message.name === 'paused') live.push(message);
    });
    try {
      const sent = await waitFor(
        async () => live.find((m) => m.replication_lag_ms >= later.lagMs),
        'a live lag',
      );
      expect(sent?.state).toBe('paused');
      expect(sent?.replication_lag_bytes).toBeGreaterThan(0);
    } finally {
      socket.close();
    }

    expect((await state('paused', 'resume')).status).toBe(200);
    await waitConverged(sourceUrl, sinkUrl, 'paused_items');
    await caughtUp('paused');
  });

  it('grows while held for schema review, the held changes not applied', async () => {
    await pipeline('held', 'held_items', { schema_policy: 'review' });
    await sqlOn(
      sourceUrl,
      `ALTER TABLE held_items ADD COLUMN extra int;
       INSERT INTO held_items SELECT g, 'after the change', g FROM generate_series(51, 60) g;`,
    );
    await waitFor(async () => (await figures('held')).state === 'pending_schema_approval', 'held for review');
    await sqlOn(sourceUrl, `INSERT INTO held_items SELECT g, 'while held', g FROM generate_series(61, 70) g`);
    await growing('held', 1_500, 'pending_schema_approval');
  });

  it('grows while the sink is out of reach, the pipeline running and retrying', async () => {
    await pipeline('sinkless', 'sinkless_items');
    await proxy.down();
    await sqlOn(
      sourceUrl,
      `INSERT INTO sinkless_items SELECT g, 'sink away' FROM generate_series(51, 150) g`,
    );
    await growing('sinkless', 1_500, 'running');
    await proxy.up();
    await waitConverged(sourceUrl, sinkUrl, 'sinkless_items');
    await caughtUp('sinkless');
  });

  it('stays small while caught up under a steady load', async () => {
    await pipeline('loaded', 'loaded_items');
    const seen: number[] = [];
    for (let i = 0; i < 60; i++) {
      await sqlOn(sourceUrl, `INSERT INTO loaded_items VALUES (${1000 + i}, 'load')`);
      seen.push((await figures('loaded')).lagMs);
    }
    await waitConverged(sourceUrl, sinkUrl, 'loaded_items');
    await caughtUp('loaded');
    // Generous: a change waits at most a batch (20 ms) and a sampling interval (1 s) on a calm machine.
    expect(Math.max(...seen)).toBeLessThan(10_000);
  });
});
