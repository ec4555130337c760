import { randomUUID } from 'node:crypto';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [cluster] = inject('pgClusters');

/**
 * RabbitMQ goes away mid-stream (its connections cut and new ones refused, through a proxy, so
 * the broker other test files share keeps running) while the source keeps changing, then comes
 * back: the failed writes are counted, and the pipeline catches up with nothing lost.
 */
describe('RabbitMQ down mid-stream', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let admin: ChannelModel;
  let channel: Channel;
  let proxy: TcpProxy;
  const exchange = `test.outage.${randomUUID().slice(0, 8)}`;
  let queue: string;
  const received: ChangeEnvelope[] = [];

  const drain = async (): Promise<ChangeEnvelope[]> => {
    for (
      let m = await channel.get(queue, { noAck: true });
      m !== false;
      m = await channel.get(queue, { noAck: true })
    ) {
      received.push(JSON.parse(m.content.toString()) as ChangeEnvelope);
    }
    return received;
  };

  beforeAll(async () => {
    admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    channel = await admin.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true })).queue;
    await channel.bindQueue(queue, exchange, '#');
    proxy = await TcpProxy.start('127.0.0.1', 5672);
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'rabbitmq_outage');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-rabbit/state', { state: 'stop' });
    await service?.stop();
    await proxy?.stop();
    await channel?.deleteExchange(exchange);
    await admin?.close();
  });

  const sinkErrors = async (): Promise<number> =>
    (await service.request('GET', '/v1/pipelines/to-rabbit/metrics')).body.sink_errors_total;

  it('publishes every change when it returns; a redelivered message only under the same id', async () => {
    for (const connection of [
      { name: 'src', type: 'postgres', dsn: dbs.source },
      { name: 'mq', type: 'rabbitmq', dsn: `amqp://guest:guest@127.0.0.1:${proxy.listenPort}/` },
    ]) {
      const created = await service.request('POST', '/v1/connections', connection);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-rabbit',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'mq', properties: { exchange, batch_max_events: '20' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await service.request('PUT', '/v1/pipelines/to-rabbit/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitFor(async () => (await drain()).length >= 100, 'the snapshot');
    await sqlOn(dbs.source, "UPDATE items SET v = 'before' WHERE id = 100");
    await waitFor(async () => (await drain()).length >= 101, 'a change before the outage');
    expect(await sinkErrors()).toBe(0);

    // The broker goes away; the source changes in several transactions, one larger than a batch.
    await proxy.down();
    for (let i = 0; i < 5; i++) {
      const base = 1000 + i * 30;
      await sqlOn(
        dbs.source,
        `INSERT INTO items SELECT g, 'new ' || g FROM generate_series(${base}, ${base + 29}) g;
         UPDATE items SET v = v || ' changed' WHERE id = ${i + 1};
         DELETE FROM items WHERE id = ${50 + i};`,
      );
    }
    await waitFor(async () => (await sinkErrors()) > 0, 'a failed sink write counted', 60_000);
    // The outage goes on a little past the failed write: its length is the scenario, not a wait
    // (waiting for a retry to fail too instead took past the test's bound on a loaded machine).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await proxy.up();

    const expected = Object.fromEntries(
      (await sqlOn<{ id: number; v: string }>(dbs.source, 'SELECT id, v FROM items ORDER BY id')).map((r) => [
        String(r.id),
        r.v,
      ]),
    );
    // Folding the messages in order, each id once, must give the source's rows.
    const folded = async () => {
      const rows: Record<string, unknown> = {};
      const seen = new Map<string, string>();
      for (const e of await drain()) {
        const body = JSON.stringify(e);
        const before = seen.get(e.id);
        if (before !== undefined) {
          expect(body, `redelivered ${e.id}`).toBe(before);
          continue;
        }
        seen.set(e.id, body);
        if (e.op === 'delete') delete rows[String(e.key?.id)];
        else if (e.after) rows[String(e.after.id)] = e.after.v;
      }
      return rows;
    };
    await waitFor(
      async () => JSON.stringify(await folded()) === JSON.stringify(expected),
      'the queue to catch up with the source',
      120_000,
    );
    expect((await service.request('GET', '/v1/pipelines/to-rabbit')).body.state).toBe('running');
    expect(await sinkErrors()).toBeGreaterThan(0);
    // Messages are named by table, commit and position: every change of the outage is there once at least.
    const changeIds = new Set(received.filter((e) => e.op !== 'read').map((e) => e.id));
    expect(changeIds.size).toBe(1 + 5 * (30 + 1 + 1));
  });
});
