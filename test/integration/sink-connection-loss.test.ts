import { randomUUID } from 'node:crypto';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  availableBinDirs,
  createDatabase,
  type RestartablePgCluster,
  startPgCluster,
} from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startItemsPipeline, startTestService, type TestService, testConfig } from '../support/service.js';

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

  // Numbers the writers' transactions across the tests, so that each inserts ids of its own.
  let transactions = 0;

  /** Transactions at the source, one after the other, until stopped: inserts, updates and deletes. */
  function keepChangingSource() {
    let stopped = false;
    const client = new pg.Client({ connectionString: dbs.source });
    const done = (async () => {
      await client.connect();
      try {
        while (!stopped) {
          const i = transactions++;
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
    // A failure is the test's: told by stop(), not left to the process.
    done.catch(() => undefined);
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
    await killMidBatch('lossy', endBusySinkSessions, 8);
    const writer = keepChangingSource();
    try {
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

  const sourceRows = async () =>
    Object.fromEntries(
      (
        await sqlOn<{ id: number; v: string; n: number }>(
          dbs.source,
          'SELECT id, v, n FROM items ORDER BY id',
        )
      ).map((r) => [r.id, [r.v, r.n]]),
    );

  /** Starts pipeline `name` from the source's items into `connection`, and waits until its snapshot is done. */
  async function startPipeline(name: string, connection: string, properties: Record<string, string>) {
    await startItemsPipeline(service, name, connection, properties);
    await waitFor(
      async () => (await eventsTotal(name)) > 0 || (await pipeline(name)).state === 'running',
      name,
    );
  }

  /**
   * Kills the sink's sessions busy with a batch while the source changes, `rounds` times, each
   * time after the pipeline applied changes again (a kill at every restart would only fail its
   * starts, and stretch the backoff between them).
   */
  async function killMidBatch(name: string, killBusy: () => Promise<number>, rounds = 5) {
    const writer = keepChangingSource();
    try {
      for (let round = 0; round < rounds; round++) {
        // Batches can be short and far apart on a busy machine: catching one may take a while.
        await waitFor(killBusy, `a sink session busy with a batch (round ${round})`, 180_000, 50);
        const applied = await eventsTotal(name);
        await waitFor(
          async () => (await eventsTotal(name)) > applied,
          `${name} to apply changes again`,
          120_000,
        );
      }
      await waitFor(async () => (await sinkErrors(name)) > 0, 'the lost batches counted as sink errors');
      expect((await pipeline(name)).state).toBe('running');
    } finally {
      await writer.stop();
    }
  }

  it('MySQL: its sessions killed (KILL) again and again mid-stream', async () => {
    const database = `connloss_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const admin: Connection = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    try {
      await admin.query(`CREATE DATABASE \`${database}\``);
      const created = await service.request('POST', '/v1/connections', {
        name: 'maria',
        type: 'mysql',
        dsn: `mysql://root@127.0.0.1:3306/${database}`,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await startPipeline('to-maria', 'maria', {});
      // Only this test's sessions (the server is shared with other test files), in a statement or a transaction.
      const killBusy = async () => {
        const [sessions] = await admin.query<RowDataPacket[]>(
          `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()
             AND (COMMAND <> 'Sleep' OR ID IN (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX))`,
          [database],
        );
        for (const { id } of sessions) await admin.query(`KILL ${Number(id)}`).catch(() => undefined);
        return sessions.length;
      };
      await killMidBatch('to-maria', killBusy);
      const sinkRows = async () => {
        const [rows] = await admin.query<RowDataPacket[]>(
          `SELECT id, v, n FROM \`${database}\`.items ORDER BY id`,
        );
        return Object.fromEntries(rows.map((r) => [r.id, [r.v, r.n]]));
      };
      const expected = await sourceRows();
      await waitFor(
        async () => JSON.stringify(await sinkRows()) === JSON.stringify(expected),
        'MariaDB to catch up with the source',
        180_000,
      );
      expect((await pipeline('to-maria')).state).toBe('running');
      expect(unhandled).toEqual([]);
    } finally {
      await service.request('PUT', '/v1/pipelines/to-maria/state', { state: 'stop' });
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    }
  }, 300_000);
});
