import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { leasesStore } from '../../src/store/leases-store.js';
import { migrate } from '../../src/store/migrate.js';
import { createStorePool, type DatabasePool, DEFAULT_PROJECT_ID } from '../../src/store/pool.js';
import { type startCliServer, startFleetInstance, stopChild } from '../support/cli-process.js';
import { createDatabase } from '../support/pg-cluster.js';
import {
  replicationDatabases,
  sqlOn,
  tableDigest,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';

// Two service processes on one metadata database; one PostgreSQL version is enough.
const [cluster] = inject('pgClusters');

/** Three pipelines reading their source connection's shared stream, and one with a slot of its own. */
const SHARED = ['s1', 's2', 's3'] as const;
const OWN = 'o1';
const TABLES = [...SHARED, OWN];

interface Lease {
  name: string;
  source_slot: string;
  owner_worker_id: string | null;
  live: boolean;
  lease_epoch: number;
  state: string;
}

describe('a source stream leased with its pipelines to one instance of a fleet', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const instances: {
    base: string;
    child: Awaited<ReturnType<typeof startCliServer>>['child'];
    output: () => string;
  }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'replicator-fleet-stream-'));
  const keyFile = join(dir, 'master.key');
  const api = (i: number, method: string, path: string, body?: unknown) =>
    jsonRequest(instances[i]?.base as string, method, path, body);
  /** The worker id of each instance, by the pid /v1/workers names. */
  const workerOf = async (i: number) => {
    const workers = (await api(i, 'GET', '/v1/workers')).body as { id: string; pid: number }[];
    const worker = workers.find((w) => w.pid === instances[i]?.child.pid);
    if (!worker) throw new Error(`instance ${i} is not among the workers`);
    return worker.id;
  };
  /**
   * The leases of the pipelines, as the metadata store has them. Checked at every read: never do
   * two workers hold live leases on pipelines of the shared stream at once.
   */
  const leases = async () => {
    const rows = await sqlOn<Lease>(
      dbs.store,
      `SELECT name, source_slot, owner_worker_id, coalesce(lease_expires_at >= now(), false) AS live,
         lease_epoch::int AS lease_epoch, state FROM pipelines ORDER BY name`,
    );
    const byName = new Map(rows.map((r) => [r.name, r]));
    const holders = new Set(
      SHARED.map((n) => byName.get(n)).flatMap((r) =>
        r?.live && r.owner_worker_id ? [r.owner_worker_id] : [],
      ),
    );
    expect(holders.size, `live holders of the shared stream: ${[...holders].join(', ')}`).toBeLessThanOrEqual(
      1,
    );
    return byName;
  };
  /** The one worker holding every shared pipeline on a live lease, each running; else undefined. */
  const streamHolder = async () => {
    const byName = await leases();
    const rows = SHARED.map((n) => byName.get(n));
    const owner = rows[0]?.owner_worker_id;
    return owner && rows.every((r) => r?.live && r.owner_worker_id === owner && r.state === 'running')
      ? owner
      : undefined;
  };

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'fleet_stream');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    for (const t of TABLES) {
      await sqlOn(
        dbs.source,
        `CREATE TABLE ${t} (id serial PRIMARY KEY, v integer); INSERT INTO ${t} (v) SELECT g FROM generate_series(1, 100) g`,
      );
    }
    for (let i = 0; i < 2; i++) {
      const { port, server } = await startFleetInstance(dbs.store, join(dir, `i${i}`), keyFile);
      instances.push({ base: `http://127.0.0.1:${port}`, child: server.child, output: server.output });
    }
    // Connection names of their own: a shared stream's slot is named after its project and source
    // connection, and slots belong to the cluster, which other test files use at the same time.
    for (const [name, dsn] of [
      ['stream_src', dbs.source],
      ['stream_dst', dbs.sink],
    ]) {
      expect((await api(0, 'POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(201);
    }
    for (const [i, t] of TABLES.entries()) {
      const slot = t === OWN ? 'own' : 'shared';
      const created = await api(i % 2, 'POST', '/v1/pipelines', {
        name: t,
        source: { connection: 'stream_src', tables: [`public.${t}`], slot },
        sink: { connection: 'stream_dst' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    expect([...(await leases()).values()].map((r) => [r.name, r.source_slot])).toEqual([
      ['o1', 'own'],
      ['s1', 'shared'],
      ['s2', 'shared'],
      ['s3', 'shared'],
    ]);
  });
  afterAll(async () => {
    for (const instance of instances) await stopChild(instance.child, 'SIGKILL');
  });

  it('runs the pipelines of the shared stream on one instance, whichever instance started them', async () => {
    const [first, second] = [await workerOf(0), await workerOf(1)];
    // The first one starts where it was started: that instance streams the source from now on.
    expect((await api(0, 'PUT', '/v1/pipelines/s1/state', { state: 'start' })).status).toBe(200);
    expect((await leases()).get('s1')).toMatchObject({ owner_worker_id: first, live: true });
    // The others are started on the other instance, which leaves them to the first.
    for (const t of ['s2', 's3', OWN]) {
      expect((await api(1, 'PUT', `/v1/pipelines/${t}/state`, { state: 'start' })).status).toBe(200);
    }
    expect(await waitFor(streamHolder, 'the shared pipelines running on one instance', 30_000)).toBe(first);
    // The pipeline with a slot of its own is leased alone: it runs where it was started.
    await waitFor(async () => {
      const own = (await leases()).get(OWN);
      return own?.live && own.owner_worker_id === second && own.state === 'running';
    }, `${OWN} running where it was started`);
    for (const t of TABLES) await waitConverged(dbs.source, dbs.sink, t);
    expect(await streamHolder()).toBe(first);
    const seen = (await api(1, 'GET', '/v1/workers')).body as { id: string; pipelines: string[] }[];
    expect(seen.find((w) => w.id === first)?.pipelines).toEqual([...SHARED]);
    expect(seen.find((w) => w.id === second)?.pipelines).toEqual([OWN]);
  });

  it('moves the shared stream whole to the other instance when its instance is killed', async () => {
    const [dead, heir] = [await workerOf(0), await workerOf(1)];
    expect(await streamHolder()).toBe(dead);
    const before = await leases();
    await stopChild(instances[0]?.child as never, 'SIGKILL');
    // Rows written after the kill, while nobody streams the shared slot.
    for (const t of TABLES)
      await sqlOn(dbs.source, `INSERT INTO ${t} (v) SELECT -g FROM generate_series(1, 50) g`);
    const holder = await waitFor(
      async () => {
        const now = await streamHolder();
        return now !== dead ? now : undefined;
      },
      'another instance to take the shared stream over',
      30_000,
    );
    expect(holder).toBe(heir);
    const after = await leases();
    for (const t of SHARED) {
      // Each pipeline's fencing epoch moved on with its claim.
      expect(after.get(t)?.lease_epoch).toBeGreaterThan(before.get(t)?.lease_epoch as number);
      expect((await api(1, 'GET', `/v1/pipelines/${t}`)).body.state).toBe('running');
    }
    expect(after.get(OWN)).toMatchObject({ owner_worker_id: heir, live: true });
    try {
      for (const t of TABLES) await waitConverged(dbs.source, dbs.sink, t, 'id', 60_000);
    } catch (error) {
      // Where each pipeline stands, to tell a stuck stream from a lease problem.
      console.error(
        JSON.stringify(
          await sqlOn(
            dbs.store,
            'SELECT name, owner_worker_id, lease_epoch, state, last_checkpoint_lsn::text FROM pipelines ORDER BY name',
          ),
        ),
        JSON.stringify(
          await sqlOn(
            dbs.source,
            'SELECT slot_name, active, active_pid, confirmed_flush_lsn::text FROM pg_replication_slots ' +
              'WHERE database = current_database()',
          ),
        ),
        JSON.stringify(await Promise.all(TABLES.map(async (t) => [t, await tableDigest(dbs.sink, t, 'id')]))),
        instances[1]?.output().slice(-6000),
      );
      throw error;
    }
    for (const t of SHARED) {
      expect(await tableDigest(dbs.sink, t, 'id')).toEqual(await tableDigest(dbs.source, t, 'id'));
      expect((await tableDigest(dbs.sink, t, 'id')).rows).toBe(150);
    }
    expect(await streamHolder()).toBe(heir);
  }, 120_000);
});

/** The same rules, one lease at a time, on the store's leases (what each worker's tick does with them). */
describe('the leases of a source stream in the metadata store', () => {
  let url: string;
  let pool: DatabasePool;
  const [w1, w2] = [randomUUID(), randomUUID()];
  const TTL = 60_000;
  const ids = new Map<string, string>();
  const id = (name: string) => ids.get(name) as string;
  const owners = async () =>
    Object.fromEntries(
      (
        await sqlOn<{ name: string; owner: string | null }>(
          url,
          `SELECT name, CASE WHEN lease_expires_at >= now() THEN owner_worker_id::text END AS owner
           FROM pipelines ORDER BY name`,
        )
      ).map((r) => [r.name, r.owner === w1 ? 'w1' : r.owner === w2 ? 'w2' : null]),
    );
  const namesOf = (pipelineIds: readonly string[]) =>
    pipelineIds.map((p) => [...ids].find(([, v]) => v === p)?.[0]).sort();
  const reset = () => sqlOn(url, 'UPDATE pipelines SET owner_worker_id = NULL, lease_expires_at = NULL');
  const expire = (names: string[]) =>
    sqlOn(url, "UPDATE pipelines SET lease_expires_at = now() - interval '1 second' WHERE name = ANY($1)", [
      names,
    ]);

  beforeAll(async () => {
    url = await createDatabase(cluster?.adminUrl as string, 'lease_stream_store');
    await migrate(url, createLogger('silent'));
    pool = await createStorePool(url);
    // a1..a3 share the stream of connection src (a1 the oldest), b1 that of connection other;
    // c1 reads src from a slot of its own.
    const pipelines = [
      ['a1', 'src', 'shared'],
      ['a2', 'src', 'shared'],
      ['a3', 'src', 'shared'],
      ['b1', 'other', 'shared'],
      ['c1', 'src', 'own'],
    ];
    for (const [i, [name, connection, slot]] of pipelines.entries()) {
      const [row] = await sqlOn<{ id: string }>(
        url,
        `INSERT INTO pipelines (project_id, name, source_connection, source_tables, sink_connection, source_slot,
           desired_state, created_at)
         VALUES ($1, $2, $3, '{public.t}', 'dst', $4, 'running', now() - make_interval(secs => $5))
         RETURNING id`,
        [DEFAULT_PROJECT_ID, name, connection, slot, 100 - i],
      );
      ids.set(name as string, row?.id as string);
    }
  });
  afterAll(() => pool?.end());

  it('lets one worker at a time hold a stream, and any worker a pipeline with a slot of its own', async () => {
    // Two workers claiming two pipelines of one stream at once: one of them gets it, every time.
    for (let round = 0; round < 20; round++) {
      await reset();
      const [first, second] = await Promise.all([
        leasesStore.claim(pool, id('a1'), w1, TTL),
        leasesStore.claim(pool, id('a2'), w2, TTL),
      ]);
      expect([first, second].filter((epoch) => epoch !== null)).toHaveLength(1);
    }
    await reset();
    expect(await leasesStore.claim(pool, id('a1'), w1, TTL)).not.toBeNull();
    expect(await leasesStore.claim(pool, id('a3'), w2, TTL)).toBeNull();
    expect(await leasesStore.claim(pool, id('c1'), w2, TTL)).not.toBeNull();
    expect(await leasesStore.claim(pool, id('b1'), w2, TTL)).not.toBeNull();
    expect(await owners()).toEqual({ a1: 'w1', a2: null, a3: null, b1: 'w2', c1: 'w2' });
    // Only the holder of the stream is offered its other pipelines, first.
    expect(namesOf((await leasesStore.claimable(pool, w2, 10)).map((c) => c.id))).toEqual([]);
    expect(await leasesStore.claimable(pool, w1, 10)).toEqual([
      { id: id('a2'), shared: true },
      { id: id('a3'), shared: true },
    ]);
    expect(namesOf(await leasesStore.claimableOfHeldStreams(pool, w1))).toEqual(['a2', 'a3']);
    expect(await leasesStore.claimableOfHeldStreams(pool, w2)).toEqual([]);
    expect(await leasesStore.streamGroupHeldElsewhere(pool, id('a2'), w2)).toBe(true);
    expect(await leasesStore.streamGroupHeldElsewhere(pool, id('a2'), w1)).toBe(false);
    expect(await leasesStore.streamGroupHeldElsewhere(pool, id('c1'), w1)).toBe(false);
  });

  it("bumps each pipeline's fencing epoch at each claim of it", async () => {
    await reset();
    const first = (await leasesStore.claim(pool, id('a2'), w1, TTL)) as number;
    expect(await leasesStore.claim(pool, id('a2'), w1, TTL)).toBe(first + 1);
    await expire(['a1', 'a2', 'a3']);
    expect(await leasesStore.claim(pool, id('a2'), w2, TTL)).toBe(first + 2);
  });

  it('keeps a stream taken over with its new holder: the old one revives none of its leases', async () => {
    await reset();
    for (const name of ['a1', 'a2', 'a3', 'b1']) await leasesStore.claim(pool, id(name), w1, TTL);
    // w1 stalled past its leases; w2 took one pipeline of the stream over before w1 came back.
    await expire(['a1', 'a2', 'a3', 'b1']);
    expect(await leasesStore.claim(pool, id('a1'), w2, TTL)).not.toBeNull();
    // w1 lets go of the rest of that stream, and gets back its other one, which nobody took.
    expect(namesOf(await leasesStore.renew(pool, w1, TTL))).toEqual(['b1']);
    expect(await owners()).toEqual({ a1: 'w2', a2: null, a3: null, b1: 'w1', c1: null });
    expect(namesOf(await leasesStore.claimableOfHeldStreams(pool, w2))).toEqual(['a2', 'a3']);
  });

  it('leaves a stream found with two holders to the one holding its oldest pipeline', async () => {
    await reset();
    await sqlOn(
      url,
      `UPDATE pipelines SET lease_expires_at = now() + interval '1 minute',
         owner_worker_id = CASE WHEN name = 'a1' THEN $1::uuid ELSE $2::uuid END
       WHERE name IN ('a1', 'a2', 'a3')`,
      [w1, w2],
    );
    expect(namesOf(await leasesStore.renew(pool, w2, TTL))).toEqual([]);
    expect(namesOf(await leasesStore.renew(pool, w1, TTL))).toEqual(['a1']);
    expect(namesOf(await leasesStore.claimableOfHeldStreams(pool, w1))).toEqual(['a2', 'a3']);
  });
});
