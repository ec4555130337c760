import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitAcknowledged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');
const REDIS_URL = 'redis://127.0.0.1:6379/0';

describe('PostgreSQL to Redis streams, through the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let redis: Redis;
  const prefix = `test:e2e:${randomUUID().slice(0, 8)}`;
  const stream = `${prefix}:public.orders`;
  let pipelineId: string | undefined;

  const read = async (): Promise<ChangeEnvelope[]> =>
    (await redis.xrange(stream, '-', '+')).map(
      ([, fields]) => JSON.parse(fields[1] as string) as ChangeEnvelope,
    );

  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'redis_e2e');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2), doc jsonb, big bigint);
       INSERT INTO orders SELECT g, g, g * 1.5, jsonb_build_object('n', g), 9007199254740993 FROM generate_series(1, 50) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-redis/state', { state: 'stop' });
    await service?.stop();
    const keys = [
      ...(await redis.keys(`${prefix}:*`)),
      ...(pipelineId ? await redis.keys(`replicator:${pipelineId}:*`) : []),
    ];
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('creates a redis connection, hiding its password', async () => {
    const created = await service.request('POST', '/v1/connections', {
      name: 'cache',
      type: 'redis',
      dsn: 'redis://default:nopass-needed@127.0.0.1:6379/0',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain('nopass-needed');
    const src = await service.request('POST', '/v1/connections', {
      name: 'src',
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(src.status).toBe(201);
  });

  it('snapshots the table, then publishes every change once, in commit order', async () => {
    // The test server has no password: a connection without one is what a pipeline can use.
    const replaced = await service.request('PUT', '/v1/connections/cache', {
      name: 'cache',
      type: 'redis',
      dsn: REDIS_URL,
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-redis',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: {
        connection: 'cache',
        properties: { stream: `${prefix}:{schema}.{table}`, batch_max_events: '4' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-redis/state', { state: 'start' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(
      async () =>
        (await service.request('GET', '/v1/pipelines/to-redis/progress')).body.phase === 'streaming',
      'streaming',
    );

    const snapshot = await read();
    expect(snapshot.length).toBe(50);
    expect(new Set(snapshot.map((e) => e.id)).size).toBe(50);
    expect(snapshot.find((e) => e.key?.id === 7)).toEqual({
      id: 'snapshot/public/orders/["7"]',
      op: 'read',
      table: 'public.orders',
      key: { id: 7 },
      before: null,
      after: { id: 7, qty: 7, price: '10.50', doc: { n: 7 }, big: '9007199254740993' },
      lsn: null,
      commit_time: null,
    });

    // Ten inserts in one transaction: more than a batch (batch_max_events 4), so it comes in pieces.
    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty) SELECT g, g FROM generate_series(51, 60) g');
    await sqlOn(dbs.source, 'UPDATE orders SET qty = -1 WHERE id = 1');
    await sqlOn(
      dbs.source,
      'BEGIN; UPDATE orders SET id = 200 WHERE id = 2; DELETE FROM orders WHERE id = 3; COMMIT',
    );
    await sqlOn(dbs.source, 'TRUNCATE orders');
    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty) VALUES (1, 1)');

    await waitFor(async () => (await read()).length >= 50 + 15, 'every change in the stream');
    // Until the pipeline has acknowledged all of it: a duplicate would be sent before that.
    await waitAcknowledged(dbs.source);
    const changes = (await read()).slice(50);
    expect(changes.map((e) => [e.op, e.key?.id ?? null])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => ['insert', 51 + i]),
      ['update', 1],
      ['update', 2],
      ['delete', 3],
      ['truncate', null],
      ['insert', 1],
    ]);
    expect(new Set(changes.map((e) => e.id)).size).toBe(changes.length);

    // Ids count the messages of each table in each transaction from 0, whatever batches it came in.
    const byLsn = new Map<string, ChangeEnvelope[]>();
    for (const e of changes) byLsn.set(e.lsn as string, [...(byLsn.get(e.lsn as string) ?? []), e]);
    expect([...byLsn.values()].map((tx) => tx.map((e) => e.id.slice((e.lsn as string).length)))).toEqual([
      Array.from({ length: 10 }, (_, i) => `/public/orders/${i}`),
      ['/public/orders/0'],
      ['/public/orders/0', '/public/orders/1'],
      ['/public/orders/0'],
      ['/public/orders/0'],
    ]);
    const lsns = [...byLsn.keys()].map((lsn) => {
      const [high, low] = lsn.split('/') as [string, string];
      return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
    });
    expect(lsns).toEqual([...lsns].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));

    expect(changes[10]).toMatchObject({
      op: 'update',
      table: 'public.orders',
      before: null,
      after: { id: 1, qty: -1, price: '1.50', doc: { n: 1 }, big: '9007199254740993' },
    });
    expect(changes[11]).toMatchObject({ op: 'update', key: { id: 2 }, after: { id: 200, qty: 2 } });
    expect(changes[12]).toMatchObject({ op: 'delete', key: { id: 3 }, before: null, after: null });
    expect(changes[13]).toMatchObject({ op: 'truncate', table: 'public.orders', key: null, after: null });
    for (const change of changes) {
      expect(change.commit_time).toMatch(/^\d{4}-\d\d-\d\dT/);
    }

    // The checkpoint is the pipeline's own, next to the streams.
    const pipeline = (await service.request('GET', '/v1/pipelines/to-redis')).body;
    const checkpoint = await redis.hgetall(`replicator:${pipeline.id}:checkpoint`);
    expect(checkpoint.lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(Number(checkpoint.epoch)).toBeGreaterThanOrEqual(1);
    expect(checkpoint.unfinished).toBeUndefined();
    pipelineId = pipeline.id;
  });
});
