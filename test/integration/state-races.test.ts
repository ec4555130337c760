import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { workerHeartbeats } from '../support/worker-heartbeats.js';

const cluster = inject('pgClusters')[0];

describe('concurrent state changes on one pipeline, across two instances', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const services: TestService[] = [];

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'races');
    await sqlOn(
      dbs.source,
      'CREATE TABLE r (id int PRIMARY KEY, v text); INSERT INTO r SELECT g, $$x$$ FROM generate_series(1, 100) g',
    );
    for (let i = 0; i < 2; i++) services.push(await startTestService(testConfig(dbs.store)));
    const [a] = services as [TestService];
    await a.request('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await a.request('POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    await a.request('POST', '/v1/pipelines', {
      name: 'race',
      source: { connection: 'src', tables: ['public.r'] },
      sink: { connection: 'dst' },
    });
  });
  afterAll(async () => {
    for (const s of services) await s.stop();
  });

  /** Walsenders streaming this pipeline's slot: the data planes alive. */
  const walsenders = async () =>
    (
      await sqlOn(
        dbs.source,
        `SELECT count(*)::int AS n FROM pg_stat_replication r JOIN pg_replication_slots s ON s.active_pid = r.pid
         WHERE s.database = current_database()`,
      )
    )[0].n as number;
  const state = async () => (await services[0]?.request('GET', '/v1/pipelines/race'))?.body.state;

  it('carries out exactly one of ten concurrent starts; the others are 409', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        services[i % 2]?.request('PUT', '/v1/pipelines/race/state', { state: 'start' }),
      ),
    );
    const statuses = answers.map((a) => a?.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    for (const refused of answers.filter((a) => a?.status === 409)) {
      expect(refused?.body.code).toBe('INVALID_TRANSITION');
    }
    await waitConverged(dbs.source, dbs.sink, 'r');
    await waitFor(async () => (await state()) === 'running', 'running');
    // Two more fleet ticks on each instance (they run on the heartbeat's period): any second data
    // plane would be started by one of them.
    await workerHeartbeats(dbs.store, 2);
    expect(await walsenders()).toBe(1);
  });

  it('stops for good: the walsender is gone within seconds and nothing more reaches the sink', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        services[i % 2]?.request('PUT', '/v1/pipelines/race/state', { state: 'stop' }),
      ),
    );
    expect(answers.filter((a) => a?.status === 200)).toHaveLength(1);
    await waitFor(async () => (await state()) === 'stopped', 'stopped', 10_000);
    await waitFor(async () => (await walsenders()) === 0, 'no walsender', 5_000);
    await sqlOn(dbs.source, "INSERT INTO r SELECT g, 'after stop' FROM generate_series(1001, 1100) g");
    // Three more fleet ticks on each instance: a restart of the stopped pipeline would come from one.
    await workerHeartbeats(dbs.store, 3);
    const [{ n }] = await sqlOn(dbs.sink, "SELECT count(*)::int AS n FROM r WHERE v = 'after stop'");
    expect(n).toBe(0);
    expect(await walsenders()).toBe(0);
  });
});
