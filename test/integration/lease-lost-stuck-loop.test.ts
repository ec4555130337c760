import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/**
 * A worker loses the lease of one pipeline while that pipeline's data plane is stuck in a sink
 * statement (behind a lock someone holds in the sink). Letting go of it must not hold up the
 * worker's other pipelines: their leases go on being renewed and they go on replicating, where
 * waiting for the stuck loop would let every other lease run out too.
 */
describe('a lease lost while the pipeline is stuck in the sink', { timeout: 120_000 }, () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let locker: pg.Client;

  const leaseExpiry = async (name: string) =>
    (
      await sqlOn<{ ms: number }>(
        dbs.store,
        'SELECT (extract(epoch FROM lease_expires_at) * 1000)::float8 AS ms FROM pipelines WHERE name = $1',
        [name],
      )
    )[0]?.ms ?? 0;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'leaselost');
    for (const t of ['stuck', 'other']) {
      await sqlOn(
        dbs.source,
        `CREATE TABLE ${t} (id int PRIMARY KEY, v text); INSERT INTO ${t} SELECT g, 'seed' FROM generate_series(1, 50) g`,
      );
    }
    service = await startTestService(testConfig(dbs.store));
    await service.request('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await service.request('POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    // Slots of their own: the pipelines of one shared stream are leased, and lost, together.
    for (const t of ['stuck', 'other']) {
      await service.request('POST', '/v1/pipelines', {
        name: t,
        source: { connection: 'src', tables: [`public.${t}`], slot: 'own' },
        sink: { connection: 'dst' },
      });
      expect((await service.request('PUT', `/v1/pipelines/${t}/state`, { state: 'start' })).status).toBe(200);
    }
    for (const t of ['stuck', 'other']) await waitConverged(dbs.source, dbs.sink, t);
  });
  afterAll(async () => {
    await locker?.query('ROLLBACK').catch(() => undefined);
    await locker?.end().catch(() => undefined);
    await service?.stop();
  });

  it('goes on renewing and running the other pipelines', async () => {
    // The next batch of `stuck` waits for this lock.
    locker = new pg.Client({ connectionString: dbs.sink });
    await locker.connect();
    await locker.query('BEGIN; LOCK TABLE public.stuck IN ACCESS EXCLUSIVE MODE');
    await sqlOn(dbs.source, "INSERT INTO stuck VALUES (1000, 'after the lock')");
    await waitFor(
      async () =>
        (
          await sqlOn<{ n: number }>(
            dbs.sink,
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'replicator-sink' AND wait_event_type = 'Lock'",
          )
        )[0]?.n,
      'the batch of stuck to wait for the lock',
    );
    // Another worker takes the lease of `stuck` (as after this process was frozen past it).
    await sqlOn(
      dbs.store,
      "UPDATE pipelines SET owner_worker_id = gen_random_uuid(), lease_epoch = lease_epoch + 1, lease_expires_at = now() + interval '1 hour' WHERE name = 'stuck'",
    );
    const stolenAt = Date.now();
    // Renewed twice over after the loss (lease 3 s): the fleet's tick was not held up.
    await waitFor(
      async () => (await leaseExpiry('other')) > stolenAt + 2 * 3_000,
      'the lease of other renewed',
    );
    await sqlOn(dbs.source, "INSERT INTO other VALUES (1000, 'while stuck is stuck')");
    await waitConverged(dbs.source, dbs.sink, 'other');
    const other = (await service.request('GET', '/v1/pipelines/other')).body;
    expect(other.state).toBe('running');
    const workers = (await service.request('GET', '/v1/workers')).body as { pipelines: string[] }[];
    expect(workers.flatMap((w) => w.pipelines)).toContain('other');
    expect(workers.flatMap((w) => w.pipelines)).not.toContain('stuck');
  });
});
