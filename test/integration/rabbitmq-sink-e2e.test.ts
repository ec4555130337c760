import { randomUUID } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitAcknowledged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('PostgreSQL to RabbitMQ, through the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let admin: ChannelModel;
  let channel: Channel;
  let queue: string;
  const exchange = `test.e2e.${randomUUID().slice(0, 8)}`;
  /** Every message taken off the queue so far, in order. */
  const received: GetMessage[] = [];

  const drain = async (): Promise<ChangeEnvelope[]> => {
    for (
      let m = await channel.get(queue, { noAck: true });
      m !== false;
      m = await channel.get(queue, { noAck: true })
    ) {
      received.push(m);
    }
    return received.map((m) => JSON.parse(m.content.toString()) as ChangeEnvelope);
  };

  beforeAll(async () => {
    admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    channel = await admin.createChannel();
    // The consumer's side comes first: with `mandatory`, a message no queue takes fails its batch.
    await channel.assertExchange(exchange, 'topic', { durable: true });
    queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true })).queue;
    await channel.bindQueue(queue, exchange, 'public.*');
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'rabbitmq_e2e');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2), doc jsonb, big bigint);
       INSERT INTO orders SELECT g, g, g * 1.5, jsonb_build_object('n', g), 9007199254740993 FROM generate_series(1, 50) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-rabbit/state', { state: 'stop' });
    await service?.stop();
    await channel?.deleteExchange(exchange);
    await admin?.close();
  });

  it('creates a rabbitmq connection, hiding its password, and refuses a bad DSN without echoing it', async () => {
    const refused = await service.request('POST', '/v1/connections', {
      name: 'mq',
      type: 'rabbitmq',
      dsn: 'amqp://guest:not-shown-secret@127.0.0.1:5672/?cacertfile=/etc/passwd',
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('INVALID_DSN');
    expect(JSON.stringify(refused.body)).not.toContain('not-shown-secret');
    expect(JSON.stringify(refused.body)).not.toContain('/etc/passwd');

    const created = await service.request('POST', '/v1/connections', {
      name: 'mq',
      type: 'rabbitmq',
      dsn: 'amqp://guest:guest@127.0.0.1:5672/%2F',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.dsn).toBe('amqp://guest:****@127.0.0.1:5672/%2F');
    const src = await service.request('POST', '/v1/connections', {
      name: 'src',
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(src.status).toBe(201);
  });

  it('snapshots the table, then publishes every change in commit order; folded by id, it is the source', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-rabbit',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'mq', properties: { exchange, batch_max_events: '4' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-rabbit/state', { state: 'start' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(
      async () =>
        (await service.request('GET', '/v1/pipelines/to-rabbit/progress')).body.phase === 'streaming',
      'streaming',
    );

    const snapshot = await drain();
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
    await sqlOn(dbs.source, "INSERT INTO orders (id, qty, doc) VALUES (1, 1, '[1, 2]'), (5, 5, NULL)");
    await sqlOn(dbs.source, 'UPDATE orders SET price = 2.25 WHERE id = 5');

    await waitFor(async () => (await drain()).length >= 50 + 17, 'every change in the queue');
    // Until the pipeline has acknowledged all of it: a duplicate would be sent before that.
    await waitAcknowledged(dbs.source);
    const all = await drain();
    const changes = all.slice(50);
    expect(changes.map((e) => [e.op, e.key?.id ?? null])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => ['insert', 51 + i]),
      ['update', 1],
      ['update', 2],
      ['delete', 3],
      ['truncate', null],
      ['insert', 1],
      ['insert', 5],
      ['update', 5],
    ]);
    expect(new Set(changes.map((e) => e.id)).size).toBe(changes.length);

    // Each message's properties name it: consumers drop a redelivery by message_id.
    for (const m of received) {
      const envelope = JSON.parse(m.content.toString()) as ChangeEnvelope;
      expect(m.properties).toMatchObject({ messageId: envelope.id, type: envelope.op, deliveryMode: 2 });
      expect(m.fields).toMatchObject({ exchange, routingKey: 'public.orders' });
    }
    const byLsn = new Map<string, ChangeEnvelope[]>();
    for (const e of changes) byLsn.set(e.lsn as string, [...(byLsn.get(e.lsn as string) ?? []), e]);
    expect([...byLsn.values()][0]?.map((e) => e.id.slice((e.lsn as string).length))).toEqual(
      Array.from({ length: 10 }, (_, i) => `/public/orders/${i}`),
    );

    // Folding the messages in order, each id once, gives the source's rows.
    const folded = new Map<string, unknown>();
    const seen = new Set<string>();
    for (const e of all) {
      if (seen.has(e.id)) continue;
      seen.add(e.id);
      if (e.op === 'truncate') folded.clear();
      else if (e.op === 'delete') folded.delete(JSON.stringify(e.key));
      else {
        if (e.op === 'update') folded.delete(JSON.stringify(e.key));
        folded.set(JSON.stringify({ id: e.after?.id }), e.after);
      }
    }
    const source = await sqlOn<{ row: Record<string, unknown> }>(
      dbs.source,
      `SELECT json_build_object('id', id, 'qty', qty, 'price', price::text, 'doc', doc, 'big', big::text) AS row
       FROM orders ORDER BY id`,
    );
    expect([...folded.values()].sort((a, b) => (a as { id: number }).id - (b as { id: number }).id)).toEqual(
      source.map((r) => r.row),
    );

    const metrics = (await service.request('GET', '/v1/pipelines/to-rabbit/metrics')).body;
    expect(metrics.sink_errors_total).toBe(0);
    // The checkpoint is kept by the service, in its own database, past the last change.
    const pipeline = (await service.request('GET', '/v1/pipelines/to-rabbit')).body;
    const lastCommit = changes.at(-1)?.lsn as string;
    await waitFor(async () => {
      const [stored] = await sqlOn<{ past: boolean }>(
        dbs.store,
        `SELECT lsn > '${lastCommit}'::pg_lsn AS past FROM sink_checkpoints WHERE pipeline_id = '${pipeline.id}'`,
      );
      return stored?.past === true;
    }, 'the checkpoint past the last change');
  });
});
