import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  availableBinDirs,
  createDatabase,
  type RestartablePgCluster,
  startPgCluster,
} from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [shared] = inject('pgClusters');

/** The application_name the PostgreSQL sink's sessions carry (src/sinks/postgres/postgres-sink.ts). */
const SINK_APPLICATION = 'replicator-sink';

/**
 * A sink's connections lost in the middle of a batch (its sessions ended by the server, the server
 * stopped and started) while the source keeps changing: the process goes on, so do the other
 * pipelines, and the one whose sink went away counts the failures, keeps running and catches up.
 */
describe('a sink connection lost in the middle of a batch', () => {
  let sinkCluster: RestartablePgCluster;
  let lossySink: string;
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  // Anything that reached the process unhandled: an 'error' event nobody listened to, most of all.
  const unhandled: unknown[] = [];
  const collect = (error: unknown) => unhandled.push(error);

  beforeAll(async () => {
    process.on('uncaughtException', collect);
    process.on('unhandledRejection', collect);
    sinkCluster = await startPgCluster('sink-loss', availableBinDirs()[0]?.binDir as string);
    lossySink = await createDatabase(sinkCluster.adminUrl, 'lossy_dst');
    dbs = await replicationDatabases(shared?.adminUrl as string, 'connloss');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text, n int NOT NULL DEFAULT 0);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 2000) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['steady', dbs.sink],
      ['lossy', lossySink],
    ] as const) {
      const created = await service.request('POST', '/v1/connections', { name, type: 'postgres', dsn });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    for (const name of ['steady', 'lossy']) {
      const created = await service.request('POST', '/v1/pipelines', {
        name,
        source: { connection: 'src', tables: ['public.items'] },
        sink: { connection: name },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect((await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' })).status).toBe(
        200,
      );
    }
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitConverged(dbs.source, lossySink, 'items');
  });

  afterAll(async () => {
    await service?.stop();
    await sinkCluster?.stop();
    process.off('uncaughtException', collect);
    process.off('unhandledRejection', collect);
  });

  const pipeline = async (name: string) => (await service.request('GET', `/v1/pipelines/${name}`)).body;
  const eventsTotal = async (name: string): Promise<number> =>
    (await service.request('GET', `/v1/pipelines/${name}/metrics`)).body.events_total;
  const sinkErrors = async (name: string): Promise<number> =>
    (await service.request('GET', `/v1/pipelines/${name}/metrics`)).body.sink_errors_total;

  /** Transactions at the source, one after the other, until stopped: inserts, updates and deletes. */
  function keepChangingSource() {
    let stopped = false;
    const client = new pg.Client({ connectionString: dbs.source });
    const done = (async () => {
      await client.connect();
      try {
        for (let i = 0; !stopped; i++) {
          const base = 10_000 + i * 20;
          await client.query(
            `BEGIN;
             INSERT INTO items (id, v) SELECT g, 'new ' || g FROM generate_series(${base}, ${base + 19}) g;
             UPDATE items SET n = n + 1, v = 'changed ${i}' WHERE id % 97 = ${i % 97};
             DELETE FROM items WHERE id = ${(i % 1900) + 50};
             COMMIT;`,
          );
        }
      } finally {
        await client.end();
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        await done;
      },
    };
  }

  /** Ends the sink's sessions that are in the middle of something (a batch); how many it ended. */
  async function endBusySinkSessions(): Promise<number> {
    const rows = await sqlOn<{ ended: boolean }>(
      sinkCluster.adminUrl,
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_backend_pid()`,
      [SINK_APPLICATION],
    );
    return rows.filter((r) => r.ended).length;
  }

  it('PostgreSQL: sessions ended again and again, then the server stopped and started', async () => {
    const writer = keepChangingSource();
    try {
      // Ended mid-batch, over and over, each time as soon as a batch is seen under way.
      let ended = 0;
      for (let round = 0; round < 8; round++) {
        ended += await waitFor(endBusySinkSessions, `a sink session busy with a batch (round ${round})`);
      }
      expect(ended).toBeGreaterThanOrEqual(8);
      await waitFor(async () => (await sinkErrors('lossy')) > 0, 'the lost batches counted as sink errors');
      expect((await pipeline('lossy')).state).toBe('running');

      // The server goes away as `pg_ctl stop -m fast` does it, and comes back on the same port.
      await sinkCluster.stopServer();
      await waitFor(
        async () => /ECONNREFUSED/.test(String((await pipeline('lossy')).error)),
        'the pipeline to show that its sink is refused',
      );
      expect((await pipeline('lossy')).state).toBe('running');
      // Another pipeline goes on meanwhile: it applies the changes still being made.
      const applied = await eventsTotal('steady');
      await waitFor(async () => (await eventsTotal('steady')) > applied, 'the other pipeline to go on');
      await sinkCluster.startServer();
    } finally {
      await writer.stop();
    }

    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitConverged(dbs.source, lossySink, 'items', 'id', 180_000);
    expect((await pipeline('lossy')).state).toBe('running');
    expect((await pipeline('steady')).state).toBe('running');
    expect((await pipeline('steady')).error).toBeNull();
    expect((await service.request('GET', '/v1/pipelines')).status).toBe(200);
    expect(unhandled).toEqual([]);
  }, 300_000);
});
