import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startItemsPipeline, startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [cluster] = inject('pgClusters');

/**
 * Each sink's server goes away mid-stream (its connections cut, new ones refused, through a proxy,
 * so the server that other test files share keeps running) while the source keeps changing, then
 * comes back: the errors are counted, and the pipeline catches up with nothing lost.
 */
describe('a sink server down mid-stream', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'outage');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
    expect(
      (await service.request('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source }))
        .status,
    ).toBe(201);
  });
  afterAll(() => service?.stop());

  /** Changes at the source while the sink is away: inserts, updates and deletes, in several transactions. */
  async function changeSourceWhileDown(from: number): Promise<void> {
    for (let i = 0; i < 5; i++) {
      const base = from + i * 10;
      await sqlOn(
        dbs.source,
        `INSERT INTO items SELECT g, 'new ' || g FROM generate_series(${base}, ${base + 9}) g;
         UPDATE items SET v = v || ' changed' WHERE id = ${i + 1};
         DELETE FROM items WHERE id = ${50 + i};`,
      );
    }
  }

  const sourceRows = async () =>
    Object.fromEntries(
      (await sqlOn<{ id: number; v: string }>(dbs.source, 'SELECT id, v FROM items ORDER BY id')).map((r) => [
        r.id,
        r.v,
      ]),
    );

  const startPipeline = (name: string, connection: string, properties: Record<string, string>) =>
    startItemsPipeline(service, name, connection, properties);

  const sinkErrors = async (name: string): Promise<number> =>
    (await service.request('GET', `/v1/pipelines/${name}/metrics`)).body.sink_errors_total;

  /** Takes the sink away, changes the source, waits for failed writes, and brings the sink back. */
  async function outage(name: string, proxy: TcpProxy, from: number) {
    await proxy.down();
    await changeSourceWhileDown(from);
    await waitFor(async () => (await sinkErrors(name)) > 0, `${name}: a failed sink write counted`, 60_000);
    await proxy.up();
  }

  it('MySQL: the batches written while it was away arrive when it returns, exactly once', async () => {
    const database = `outage_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const admin: Connection = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    const proxy = await TcpProxy.start('127.0.0.1', 3306);
    try {
      await admin.query(`CREATE DATABASE \`${database}\``);
      const created = await service.request('POST', '/v1/connections', {
        name: 'maria',
        type: 'mysql',
        dsn: `mysql://root@127.0.0.1:${proxy.listenPort}/${database}`,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await startPipeline('to-maria', 'maria', {});
      const sinkRows = async () => {
        const [rows] = await admin.query<RowDataPacket[]>(
          `SELECT id, v FROM \`${database}\`.items ORDER BY id`,
        );
        return Object.fromEntries(rows.map((r) => [r.id, r.v]));
      };
      await waitFor(
        async () => Object.keys(await sinkRows().catch(() => ({}))).length === 100,
        'the snapshot',
      );

      await outage('to-maria', proxy, 1000);
      const expected = await sourceRows();
      await waitFor(
        async () => JSON.stringify(await sinkRows()) === JSON.stringify(expected),
        'MariaDB to catch up with the source',
        120_000,
      );
      expect((await service.request('GET', '/v1/pipelines/to-maria')).body.state).toBe('running');
    } finally {
      await service.request('PUT', '/v1/pipelines/to-maria/state', { state: 'stop' });
      await proxy.stop();
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    }
  });

  it('Redis: every change arrives when it returns, a redelivered one only with the same id', async () => {
    const prefix = `test:outage:${randomUUID().slice(0, 8)}`;
    const redis = new Redis('redis://127.0.0.1:6379/0');
    const proxy = await TcpProxy.start('127.0.0.1', 6379);
    const stream = `${prefix}:public.items`;
    try {
      const created = await service.request('POST', '/v1/connections', {
        name: 'cache',
        type: 'redis',
        dsn: `redis://127.0.0.1:${proxy.listenPort}/0`,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await startPipeline('to-redis', 'cache', { stream: `${prefix}:{schema}.{table}` });
      const envelopes = async () =>
        (await redis.xrange(stream, '-', '+')).map(
          ([, fields]) => JSON.parse(fields[1] as string) as ChangeEnvelope,
        );
      await waitFor(async () => (await envelopes()).length >= 100, 'the snapshot');

      await outage('to-redis', proxy, 2000);
      // Folding the messages in order, each id once, must give the source's rows.
      const expected = await sourceRows();
      const folded = async () => {
        const rows: Record<string, unknown> = {};
        const seen = new Map<string, string>();
        for (const e of await envelopes()) {
          const body = JSON.stringify(e);
          const before = seen.get(e.id);
          if (before !== undefined) {
            expect(body, `redelivered ${e.id}`).toBe(before);
            continue;
          }
          seen.set(e.id, body);
          const id = String(e.key?.id);
          if (e.op === 'delete') delete rows[id];
          else if (e.after) rows[String(e.after.id)] = e.after.v;
        }
        return rows;
      };
      await waitFor(
        async () => JSON.stringify(await folded()) === JSON.stringify(expected),
        'the stream to catch up with the source',
        120_000,
      );
    } finally {
      await service.request('PUT', '/v1/pipelines/to-redis/state', { state: 'stop' });
      await proxy.stop();
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  });
});
