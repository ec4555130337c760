import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  availableBinDirs,
  createDatabase,
  type RestartablePgCluster,
  startPgCluster,
} from '../support/pg-cluster.js';
import { createSourceAndSink, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/**
 * The metadata store goes away for a while (its server stopped, longer than the leases last) and
 * comes back: the API says so with 503 meanwhile, the pipeline holds its data plane (one, never
 * two), nothing is lost or counted twice, and everything resumes by itself.
 */
describe('the metadata store down for a while', { timeout: 240_000 }, () => {
  let storeCluster: RestartablePgCluster;
  let storeUrl: string;
  let source: string;
  let sink: string;
  let service: TestService;
  let pipelineId: string;
  const leaseTtlMs = 3_000;

  const pipeline = async () => (await service.request('GET', '/v1/pipelines/held')).body;
  const stored = async () =>
    (
      await sqlOn<{ state: string; error: string | null; lease_epoch: number; events_total: string }>(
        storeUrl,
        "SELECT state, error, lease_epoch::int, events_total::text FROM pipelines WHERE name = 'held'",
      )
    )[0];
  /** Sessions streaming from the source database (one per data plane). */
  const streams = async () =>
    (
      await sqlOn<{ n: number }>(
        source,
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = 'replicator-stream' AND datname = current_database()`,
      )
    )[0]?.n;

  beforeAll(async () => {
    const embedded = availableBinDirs()[0] as { binDir: string };
    storeCluster = await startPgCluster('store-outage', embedded.binDir);
    storeUrl = await createDatabase(storeCluster.adminUrl, 'store');
    source = await createDatabase(cluster?.adminUrl as string, 'store_outage_src');
    sink = await createDatabase(cluster?.adminUrl as string, 'store_outage_dst');
    await sqlOn(
      source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    service = await startTestService({ ...testConfig(storeUrl), leaseTtlMs });
    await createSourceAndSink(service.request, { source, sink });
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'held',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'dst' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    pipelineId = created.body.id;
    expect((await service.request('PUT', '/v1/pipelines/held/state', { state: 'start' })).status).toBe(200);
    await waitConverged(source, sink, 'items');
  });
  afterAll(async () => {
    await service?.stop();
    await storeCluster?.stop();
  });

  it('answers 503 while it is down, holds the pipeline, and resumes by itself when it is back', async () => {
    await sqlOn(source, "INSERT INTO items SELECT g, 'before ' || g FROM generate_series(101, 110) g");
    await waitConverged(source, sink, 'items');
    await waitFor(async () => Number((await stored())?.events_total) === 10, 'the events recorded');
    const before = await stored();
    expect(before).toMatchObject({ state: 'running', error: null });

    await storeCluster.stopServer();
    const health = await waitFor(async () => {
      const res = await service.request('GET', '/v1/health');
      return res.status === 503 ? res.body : undefined;
    }, 'the health check to see the store down');
    expect(health.status).toBe('unavailable');
    expect(health.checks[0]).toMatchObject({ name: 'store', status: 'failing' });
    expect(health.checks[0].message).toContain('metadata store unreachable');
    const listed = await service.request('GET', '/v1/pipelines');
    expect(listed.status).toBe(503);
    expect(listed.body).toEqual({
      error: 'the metadata store is unreachable; retry later',
      code: 'UNAVAILABLE',
    });
    // Changes while the store is down, for longer than a lease lasts.
    const downSince = Date.now();
    let next = 111;
    while (Date.now() - downSince < 2 * leaseTtlMs) {
      await sqlOn(source, `INSERT INTO items VALUES (${next}, 'during ${next}')`);
      next++;
      expect(await streams()).toBeLessThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 200));
    }

    await storeCluster.startServer();
    await waitFor(async () => (await service.request('GET', '/v1/health')).status === 200, 'health back');
    await sqlOn(source, `INSERT INTO items VALUES (${next}, 'after ${next}')`);
    await waitConverged(source, sink, 'items');
    const changes = next - 110;
    // Every change counted once in the store, written after the outage; the state too.
    await waitFor(
      async () => Number((await stored())?.events_total) === 10 + changes,
      `${10 + changes} events recorded`,
    );
    const after = await stored();
    expect(after).toMatchObject({ state: 'running', error: null });
    // The same worker kept its lease: no new epoch, so no second data plane and no fenced batches.
    expect(after?.lease_epoch).toBe(before?.lease_epoch);
    expect(await streams()).toBe(1);
    expect(await pipeline()).toMatchObject({ state: 'running', error: null });
    const runs = (await service.request('GET', '/v1/pipelines/held/runs')).body.runs;
    expect(runs.filter((r: { outcome: string }) => r.outcome === 'running')).toHaveLength(1);
    expect(runs.some((r: { outcome: string }) => r.outcome === 'failed')).toBe(false);
  });

  it('stores a state reached while the store is down once it is back', async () => {
    await sqlOn(sink, "ALTER TABLE items ADD CONSTRAINT no_poison CHECK (v <> 'poison')");
    await storeCluster.stopServer();
    await waitFor(async () => (await service.request('GET', '/v1/health')).status === 503, 'the store down');
    // A change the sink refuses for good fails the pipeline while the store cannot hear of it.
    await sqlOn(source, "INSERT INTO items VALUES (100000, 'poison')");
    await waitFor(
      async () => service.running.supervisor.stateOf({ id: pipelineId } as never) === 'failed',
      'the pipeline to fail',
    );
    await storeCluster.startServer();
    const failed = await waitFor(async () => {
      const row = await stored().catch(() => undefined);
      return row?.state === 'failed' ? row : undefined;
    }, 'the failure stored');
    expect(failed?.error).toContain('no_poison');
    const runs = (await service.request('GET', '/v1/pipelines/held/runs')).body.runs;
    expect(runs[0]).toMatchObject({ outcome: 'failed' });

    await sqlOn(sink, 'ALTER TABLE items DROP CONSTRAINT no_poison');
    expect((await service.request('PUT', '/v1/pipelines/held/state', { state: 'start' })).status).toBe(200);
    await waitConverged(source, sink, 'items');
    await waitFor(async () => (await pipeline()).state === 'running', 'running again');
  });
});
