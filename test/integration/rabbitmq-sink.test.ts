import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { TableSchema } from '../../src/core/change.js';
import type { Sink, SinkStateStore } from '../../src/core/sink.js';
import { freePort } from '../../src/net/free-port.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { Broker } from '../../src/sinks/rabbitmq/broker.js';
import { Flight } from '../../src/sinks/rabbitmq/confirms.js';
import { rabbitmqConnectionType } from '../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { createRabbitmqSink } from '../../src/sinks/rabbitmq/rabbitmq-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { copyText, ev, lines, orderRows, orders, type Tx, tx } from '../support/message-sink-fixtures.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const RABBITMQ_URL = 'amqp://guest@127.0.0.1:5672/';
const GUEST = { password: 'guest', tls: {} };

const inserts = (t: Tx, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ev(t, { op: 'insert', after: { id: String(from + i) } }));

describe('rabbitmq sink, through the sink contract', () => {
  let admin: ChannelModel;
  let channel: Channel;
  const opened: Sink[] = [];
  const exchanges: string[] = [];

  /** A fresh pipeline: its own exchange, a queue bound to all of it, and its own bookkeeping. */
  async function pipeline(properties: Record<string, string> = {}, bind: string | null = '#') {
    const exchange = `test.${randomUUID().slice(0, 8)}`;
    exchanges.push(exchange);
    const props = { exchange, ...properties };
    const state = memorySinkState();
    const open = async (
      tables: TableSchema[] = [orders, lines],
      store: SinkStateStore = state,
      url = RABBITMQ_URL,
    ) => {
      const settings = await rabbitmqConnectionType.settings(url, GUEST, NO_LOCAL_ACCESS);
      const sink = createRabbitmqSink({
        pipelineId: randomUUID(),
        connection: settings,
        properties: props,
        state: store,
      });
      opened.push(sink);
      await sink.open(tables);
      return sink;
    };
    // The sink declares the exchange; a test binds its queue once it exists.
    const queue = async (pattern = bind ?? '#') => {
      await channel.assertExchange(exchange, properties.exchange_type ?? 'topic', { durable: true });
      const { queue: name } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
      await channel.bindQueue(name, exchange, pattern);
      return name;
    };
    const bound = bind === null ? undefined : await queue(bind);
    /** Every message in the queue, taken off it. */
    const take = async (name = bound as string): Promise<GetMessage[]> => {
      const messages: GetMessage[] = [];
      for (;;) {
        const message = await channel.get(name, { noAck: true });
        if (message === false) return messages;
        messages.push(message);
      }
    };
    const read = async (name?: string): Promise<ChangeEnvelope[]> =>
      (await take(name)).map((m) => JSON.parse(m.content.toString()) as ChangeEnvelope);
    return { exchange, state, open, queue, bound, take, read };
  }

  beforeAll(async () => {
    admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    channel = await admin.createChannel();
    channel.on('error', () => undefined);
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    const cleanup = await admin.createChannel();
    for (const exchange of exchanges) await cleanup.deleteExchange(exchange);
    await admin.close();
  });

  it('publishes snapshot rows as persistent read messages named by their key, the marker in the service', async () => {
    const p = await pipeline();
    const sink = await p.open();
    expect(
      await sink.writeSnapshotPartition(
        orders,
        { table: orders, partitionId: '0' },
        copyText(orderRows(1, 3)),
      ),
    ).toBe(3);
    expect(await p.state.partitionsDone()).toEqual([{ table: orders, partitionId: '0' }]);

    const messages = await p.take();
    const events = messages.map((m) => JSON.parse(m.content.toString()) as ChangeEnvelope);
    expect(events[0]).toEqual({
      id: 'snapshot/public/orders/["1"]',
      op: 'read',
      table: 'public.orders',
      key: { id: 1 },
      before: null,
      after: { id: 1, total: '1.50', note: 'n' },
      lsn: null,
      commit_time: null,
    });
    expect(messages[0]?.fields.routingKey).toBe('public.orders');
    expect(messages[0]?.properties).toMatchObject({
      messageId: 'snapshot/public/orders/["1"]',
      type: 'read',
      deliveryMode: 2,
      contentType: 'application/json',
      appId: 'replicator',
      headers: { schema: 'public', table: 'orders', op: 'read' },
    });
    expect(events.map((e) => e.op)).toEqual(['read', 'read', 'read']);
    expect(messages.every((m) => m.properties.messageId === JSON.parse(m.content.toString()).id)).toBe(true);
  });

  it('publishes inserts, updates, deletes and truncates as envelopes, then the checkpoint', async () => {
    const p = await pipeline();
    const sink = await p.open();
    const t1 = tx(1);
    const t2 = tx(2);
    const t3 = tx(3);
    await sink.applyBatch({
      changes: [
        ev(t1, { op: 'insert', after: { id: '1', total: '9.99', note: 'hello' } }),
        ev(t1, { op: 'insert', table: lines, after: { id: '9007199254740993', sku: 'X' } }),
        ev(t2, { op: 'update', after: { id: '1', total: '10.00' }, unchangedToast: ['note'] }),
        ev(t2, { op: 'update', key: { id: '1' }, after: { id: '2', total: '10.00', note: 'moved' } }),
      ],
      commitLsn: t2.end,
      epoch: 1,
    });
    expect(await sink.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
    await sink.applyBatch({
      changes: [
        ev(t3, { op: 'delete', key: { id: '2' } }),
        ev(t3, { op: 'truncate', tables: [orders, lines] }),
      ],
      commitLsn: t3.end,
      epoch: 1,
    });
    expect(await sink.readCheckpoint()).toEqual({ lsn: t3.end, epoch: 1 });
    expect((await p.state.readCheckpoint())?.detail).toEqual({});

    const messages = await p.take();
    const base = (t: Tx, n: number, path = 'public/orders') => ({
      id: `${t.lsnText}/${path}/${n}`,
      lsn: t.lsnText,
      commit_time: t.commitTime,
    });
    expect(messages.map((m) => JSON.parse(m.content.toString()))).toEqual([
      {
        ...base(t1, 0),
        op: 'insert',
        table: 'public.orders',
        key: { id: 1 },
        before: null,
        after: { id: 1, total: '9.99', note: 'hello' },
      },
      {
        ...base(t1, 0, 'shop/lines'),
        op: 'insert',
        table: 'shop.lines',
        key: { id: '9007199254740993' },
        before: null,
        after: { id: '9007199254740993', sku: 'X' },
      },
      {
        ...base(t2, 0),
        op: 'update',
        table: 'public.orders',
        key: { id: 1 },
        before: null,
        after: { id: 1, total: '10.00' },
        unchanged: ['note'],
      },
      {
        ...base(t2, 1),
        op: 'update',
        table: 'public.orders',
        key: { id: 1 },
        before: null,
        after: { id: 2, total: '10.00', note: 'moved' },
      },
      { ...base(t3, 0), op: 'delete', table: 'public.orders', key: { id: 2 }, before: null, after: null },
      { ...base(t3, 1), op: 'truncate', table: 'public.orders', key: null, before: null, after: null },
      {
        ...base(t3, 0, 'shop/lines'),
        op: 'truncate',
        table: 'shop.lines',
        key: null,
        before: null,
        after: null,
      },
    ]);
    expect(messages.map((m) => [m.fields.exchange, m.fields.routingKey, m.properties.type])).toEqual([
      [p.exchange, 'public.orders', 'insert'],
      [p.exchange, 'shop.lines', 'insert'],
      [p.exchange, 'public.orders', 'update'],
      [p.exchange, 'public.orders', 'update'],
      [p.exchange, 'public.orders', 'delete'],
      [p.exchange, 'public.orders', 'truncate'],
      [p.exchange, 'shop.lines', 'truncate'],
    ]);
    for (const m of messages) {
      const envelope = JSON.parse(m.content.toString()) as ChangeEnvelope;
      expect(m.properties).toMatchObject({
        messageId: envelope.id,
        deliveryMode: 2,
        contentType: 'application/json',
        timestamp: Date.parse(envelope.commit_time as string) / 1000,
      });
    }
  });

  it('routes each table by the exchange and routing key templates', async () => {
    const prefix = `test.${randomUUID().slice(0, 8)}`;
    exchanges.push(`${prefix}.public`, `${prefix}.shop`);
    const settings = await rabbitmqConnectionType.settings(RABBITMQ_URL, GUEST, NO_LOCAL_ACCESS);
    const sink = createRabbitmqSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: { exchange: `${prefix}.{schema}`, routing_key: 'cdc.{table}' },
      state: memorySinkState(),
    });
    opened.push(sink);
    await sink.open([orders, lines]);
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(queue, `${prefix}.public`, 'cdc.orders');
    await channel.bindQueue(queue, `${prefix}.shop`, 'cdc.*');
    const t1 = tx(1);
    await sink.applyBatch({
      changes: [
        ev(t1, { op: 'insert', after: { id: '1' } }),
        ev(t1, { op: 'insert', table: lines, after: { id: '2' } }),
      ],
      commitLsn: t1.end,
      epoch: 1,
    });
    const messages: GetMessage[] = [];
    for (
      let m = await channel.get(queue, { noAck: true });
      m !== false;
      m = await channel.get(queue, { noAck: true })
    ) {
      messages.push(m);
    }
    expect(messages.map((m) => [m.fields.exchange, m.fields.routingKey])).toEqual([
      [`${prefix}.public`, 'cdc.orders'],
      [`${prefix}.shop`, 'cdc.lines'],
    ]);
  });

  it('stores the checkpoint only once every message of the batch is confirmed, and in the queue', async () => {
    const p = await pipeline();
    const seen: number[] = [];
    const state = memorySinkState();
    const watching: SinkStateStore = {
      ...state,
      writeCheckpoint: async (checkpoint, detail) => {
        seen.push((await channel.checkQueue(p.bound as string)).messageCount);
        await state.writeCheckpoint(checkpoint, detail);
      },
    };
    const sink = await p.open([orders, lines], watching);
    await sink.applyBatch({ changes: inserts(tx(1), 1, 3000), commitLsn: tx(1).end, epoch: 1 });
    await sink.applyBatch({ changes: inserts(tx(2), 5000, 10), commitLsn: tx(2).end, epoch: 1 });
    expect(seen).toEqual([3000, 3010]);
    expect(await sink.readCheckpoint()).toEqual({ lsn: tx(2).end, epoch: 1 });
  });

  it('fails a batch with a message no queue takes, storing no checkpoint, unless mandatory is false', async () => {
    const p = await pipeline({}, 'public.*');
    const sink = await p.open();
    const t1 = tx(1);
    const batch = {
      changes: [
        ev(t1, { op: 'insert', after: { id: '1' } }),
        ev(t1, { op: 'insert', table: lines, after: { id: '1' } }),
      ],
      commitLsn: t1.end,
      epoch: 1,
    };
    await expect(sink.applyBatch(batch)).rejects.toThrow(
      `no queue took message ${t1.lsnText}/shop/lines/0 published to exchange '${p.exchange}' with routing key 'shop.lines' (312 NO_ROUTE): bind a queue that matches it, or set the sink property mandatory to false`,
    );
    expect(await sink.readCheckpoint()).toBeNull();
    // The message that had a queue went to it: the retried batch brings it again, under its id.
    expect((await p.read()).map((e) => e.id)).toEqual([`${t1.lsnText}/public/orders/0`]);
    // The sink goes on: the next batch, once a queue takes every message, passes.
    const all = await p.queue('#');
    await sink.applyBatch(batch);
    expect((await p.read(all)).map((e) => e.id)).toEqual([
      `${t1.lsnText}/public/orders/0`,
      `${t1.lsnText}/shop/lines/0`,
    ]);

    const q = await pipeline({ mandatory: 'false' }, 'public.*');
    const lenient = await q.open();
    await lenient.applyBatch(batch);
    expect(await lenient.readCheckpoint()).toEqual({ lsn: t1.end, epoch: 1 });
    expect((await q.read()).map((e) => e.id)).toEqual([`${t1.lsnText}/public/orders/0`]);
  });

  it('fails a batch the broker nacks', async () => {
    const p = await pipeline({}, null);
    const sink = await p.open();
    const { queue: full } = await channel.assertQueue('', {
      exclusive: true,
      autoDelete: true,
      maxLength: 1,
      arguments: { 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(full, p.exchange, '#');
    await expect(
      sink.applyBatch({ changes: inserts(tx(1), 1, 3), commitLsn: tx(1).end, epoch: 1 }),
    ).rejects.toThrow(/refused message 0\/1000\/public\/orders\/[12] \(nack\)/);
    expect(await sink.readCheckpoint()).toBeNull();
  });

  it('fails a large batch at its first nack, with what the queue took in commit order and no checkpoint', async () => {
    const p = await pipeline({}, null);
    const sink = await p.open();
    // The queue takes 1,200 messages and refuses the rest: the batch's later chunks are nacked.
    const { queue: full } = await channel.assertQueue('', {
      exclusive: true,
      autoDelete: true,
      maxLength: 1200,
      arguments: { 'x-overflow': 'reject-publish' },
    });
    await channel.bindQueue(full, p.exchange, '#');
    const t1 = tx(1);
    await expect(
      sink.applyBatch({ changes: inserts(t1, 1, 3000), commitLsn: t1.end, epoch: 1 }),
    ).rejects.toThrow(`refused message ${t1.lsnText}/public/orders/1200 (nack)`);
    expect(await sink.readCheckpoint()).toBeNull();
    // Closed, the sink's connection has had every frame it sent handled: the queue holds all it will.
    await sink.close();
    const taken = (await p.read(full)).map((e) => e.id);
    expect(taken).toEqual(Array.from({ length: 1200 }, (_, i) => `${t1.lsnText}/public/orders/${i}`));
  });

  it('fails a large batch whose later message is returned, then publishes it again whole under the same ids', async () => {
    const p = await pipeline({}, 'public.*');
    const sink = await p.open();
    const t1 = tx(1);
    const t2 = tx(2);
    // Two transactions across many chunks; the unroutable message is near the end of the second.
    const changes = [
      ...inserts(t1, 1, 1700),
      ...inserts(t2, 5000, 1500),
      ev(t2, { op: 'insert', table: lines, after: { id: '1' } }),
      ...inserts(t2, 7000, 10),
    ];
    const batch = { changes, commitLsn: t2.end, epoch: 1 };
    await expect(sink.applyBatch(batch)).rejects.toThrow(`no queue took message ${t2.lsnText}/shop/lines/0`);
    expect(await sink.readCheckpoint()).toBeNull();
    // Messages sent after the returned one may still be routed: closing waits for the broker to handle them.
    await sink.close();
    const expected = [
      ...Array.from({ length: 1700 }, (_, i) => `${t1.lsnText}/public/orders/${i}`),
      ...Array.from({ length: 1500 }, (_, i) => `${t2.lsnText}/public/orders/${i}`),
      `${t2.lsnText}/shop/lines/0`,
      ...Array.from({ length: 10 }, (_, i) => `${t2.lsnText}/public/orders/${1500 + i}`),
    ];
    // What the queue took of the failed batch is a prefix of its routable messages, in commit order.
    const first = (await p.read()).map((e) => e.id);
    const routable = expected.filter((id) => !id.includes('/shop/lines/'));
    expect(first).toEqual(routable.slice(0, first.length));
    // Retried once a queue takes every message: the whole batch again, in order, the same ids.
    const all = await p.queue('#');
    const again = await p.open();
    await again.applyBatch(batch);
    expect((await p.read(all)).map((e) => e.id)).toEqual(expected);
    expect(await again.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
  });

  it('declares a missing exchange durable, takes one of its type, and refuses one of another type', async () => {
    const p = await pipeline({}, null);
    await p.open();
    // The sink's declaration is there, durable: declaring it the same way again passes.
    await channel.assertExchange(p.exchange, 'topic', { durable: true });

    const fanout = `test.${randomUUID().slice(0, 8)}`;
    exchanges.push(fanout);
    await channel.assertExchange(fanout, 'fanout', { durable: true });
    const settings = await rabbitmqConnectionType.settings(RABBITMQ_URL, GUEST, NO_LOCAL_ACCESS);
    const make = (properties: Record<string, string>) => {
      const sink = createRabbitmqSink({
        pipelineId: randomUUID(),
        connection: settings,
        properties,
        state: memorySinkState(),
      });
      opened.push(sink);
      return sink;
    };
    await expect(make({ exchange: fanout }).open([orders])).rejects.toThrow(
      `exchange '${fanout}' exists in RabbitMQ at 127.0.0.1:5672 (vhost /) with another type or durability than a durable topic exchange`,
    );
    await expect(make({ exchange: fanout }).open([orders])).rejects.toThrow(
      /received 'topic' but current is 'fanout'.*set exchange_type to its type/,
    );
    const matching = make({ exchange: fanout, exchange_type: 'fanout', routing_key: '' });
    await matching.open([orders]);
    const { queue: q } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(q, fanout, '');
    await matching.applyBatch({ changes: inserts(tx(1), 1, 2), commitLsn: tx(1).end, epoch: 1 });
    expect((await p.take(q)).map((m) => m.fields.routingKey)).toEqual(['', '']);
    // A predeclared exchange of the broker's own is taken as it is.
    await make({ exchange: 'amq.topic' }).open([orders]);
  });

  it('fails with an unreachable error, not a hang, when RabbitMQ cannot be reached', async () => {
    const port = await freePort();
    const settings = await rabbitmqConnectionType.settings(
      `amqp://guest@127.0.0.1:${port}/`,
      GUEST,
      NO_LOCAL_ACCESS,
    );
    const sink = createRabbitmqSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: {},
      state: memorySinkState(),
    });
    // Refused at once: a hang would meet the test's own timeout.
    const failed = sink.open([orders]);
    await expect(failed).rejects.toThrow(
      `cannot connect to RabbitMQ at 127.0.0.1:${port} (vhost /): connect ECONNREFUSED`,
    );
    expect(isUnreachable(await failed.catch((e: unknown) => e))).toBe(true);
    await sink.close();
    await sink.close();
  });

  it('fails on a refused login without showing the password, and without waiting forever for it', async () => {
    const secret = `wrong-${randomUUID()}`;
    const settings = await rabbitmqConnectionType.settings(
      RABBITMQ_URL,
      { password: secret, tls: {} },
      NO_LOCAL_ACCESS,
    );
    const sink = createRabbitmqSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: {},
      state: memorySinkState(),
    });
    const error = (await sink.open([orders]).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /cannot connect to RabbitMQ at 127\.0\.0\.1:5672 \(vhost \/\): .*ACCESS.REFUSED/,
    );
    expect(JSON.stringify({ ...error, message: error.message, stack: error.stack })).not.toContain(secret);
    expect(isUnreachable(error)).toBe(false);
    await sink.close();
  });

  it('fails a batch under way at once when the connection is lost, as an outage', async () => {
    const p = await pipeline();
    const proxy = await TcpProxy.start('127.0.0.1', 5672);
    try {
      const sink = await p.open([orders, lines], p.state, `amqp://guest@127.0.0.1:${proxy.listenPort}/`);
      await sink.applyBatch({ changes: inserts(tx(1), 1, 10), commitLsn: tx(1).end, epoch: 1 });
      const big = sink.applyBatch({ changes: inserts(tx(2), 100, 50_000), commitLsn: tx(2).end, epoch: 1 });
      const outcome = big.catch((e: unknown) => e);
      // Cut once the batch is under way: the broker has taken some of its messages.
      await vi.waitFor(
        async () => expect((await channel.checkQueue(p.bound as string)).messageCount).toBeGreaterThan(10),
        { timeout: 30_000, interval: 10 },
      );
      await proxy.down();
      // The batch fails once the connection is cut: a hang would meet the test's own timeout.
      const error = (await outcome) as Error & { code?: string };
      expect(error.message).toMatch(/^lost the connection to RabbitMQ at 127\.0\.0\.1:\d+ \(vhost \/\)/);
      // Reset as the broker's side goes, or a broken pipe when the sink was writing at that moment.
      expect(['ECONNRESET', 'EPIPE']).toContain(error.code);
      expect(isUnreachable(error)).toBe(true);
      expect(await sink.readCheckpoint()).toEqual({ lsn: tx(1).end, epoch: 1 });
      // Every later call fails the same way, at once: the runtime opens a new sink.
      await expect(
        sink.applyBatch({ changes: inserts(tx(3), 1, 1), commitLsn: tx(3).end, epoch: 1 }),
      ).rejects.toMatchObject({ code: error.code });
    } finally {
      await proxy.stop();
    }
  });

  it('fails publishing that makes no progress for the confirm timeout, as an outage', async () => {
    // A front that stops passing the broker's frames on: no confirm, no heartbeat, no close.
    let frozen = false;
    const sockets = new Set<Socket>();
    const front = createServer((client) => {
      const upstream = createConnection(5672, '127.0.0.1');
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.on('data', (data: Buffer) => {
        if (!frozen) client.write(data);
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const exchange = `test.${randomUUID().slice(0, 8)}`;
    exchanges.push(exchange);
    try {
      const port = (front.address() as AddressInfo).port;
      const settings = await rabbitmqConnectionType.settings(
        `amqp://guest@127.0.0.1:${port}/`,
        GUEST,
        NO_LOCAL_ACCESS,
      );
      const broker = await Broker.connect(settings, { stallTimeoutMs: 500 });
      await broker.declareExchange(exchange, 'topic');
      const publish = (channel: ConfirmChannel) => async () => {
        const flight = new Flight(broker, channel);
        try {
          await flight.publish({
            exchange,
            routingKey: 'x',
            content: Buffer.from('{}'),
            options: { messageId: 'm1', persistent: true },
          });
          await flight.settled();
        } finally {
          flight.end();
        }
      };
      // A channel used once before is lent again: the broker goes silent while it waits for a confirm.
      await broker.withChannel((channel) => publish(channel)());
      const started = Date.now();
      const error = (await broker
        .withChannel((channel) => {
          frozen = true;
          return publish(channel)();
        })
        .catch((e: unknown) => e)) as Error & { code?: string };
      expect(Date.now() - started).toBeGreaterThanOrEqual(450);
      expect(error.message).toBe(`RabbitMQ at 127.0.0.1:${port} (vhost /) confirmed nothing for 0.5 s`);
      expect(error.code).toBe('ETIMEDOUT');
      expect(isUnreachable(error)).toBe(true);
      // The connection is given up: later calls fail at once, and closing does not wait for the broker.
      await expect(broker.withChannel(async () => 1)).rejects.toBe(error);
      // A close that waited for the frozen broker would never end (the test's own timeout).
      await broker.close();

      // A broker silent from the start of a request: a declaration times out the same way.
      frozen = false;
      const other = await Broker.connect(settings, { stallTimeoutMs: 500 });
      frozen = true;
      await expect(other.declareExchange(exchange, 'topic')).rejects.toMatchObject({
        message: `RabbitMQ at 127.0.0.1:${port} (vhost /) did not answer the opening of a channel for 0.5 s`,
        code: 'ETIMEDOUT',
      });
      await other.close();
      for (const socket of sockets) socket.destroy();
    } finally {
      await new Promise((resolve) => front.close(resolve));
    }
  });

  it('publishes without the configure permission to an exchange that exists, and says so when it does not', async () => {
    const user = `replicator-test-${randomUUID().slice(0, 8)}`;
    const password = `pw-${randomUUID()}`;
    const ctl = (...args: string[]) => execFileSync('rabbitmqctl', args, { stdio: 'pipe', timeout: 30_000 });
    ctl('add_user', user, password);
    try {
      // May write and read anything, configure nothing: no exchange of its own.
      ctl('set_permissions', '-p', '/', user, '^$', '.*', '.*');
      const p = await pipeline();
      const settings = await rabbitmqConnectionType.settings(
        `amqp://${user}@127.0.0.1:5672/`,
        { password, tls: {} },
        NO_LOCAL_ACCESS,
      );
      const make = (exchange: string) => {
        const sink = createRabbitmqSink({
          pipelineId: randomUUID(),
          connection: settings,
          properties: { exchange },
          state: memorySinkState(),
        });
        opened.push(sink);
        return sink;
      };
      const sink = make(p.exchange);
      await sink.open([orders]);
      await sink.applyBatch({ changes: inserts(tx(1), 1, 2), commitLsn: tx(1).end, epoch: 1 });
      expect((await p.read()).map((e) => e.after?.id)).toEqual([1, 2]);

      const missing = `test.${randomUUID().slice(0, 8)}`;
      const error = (await make(missing)
        .open([orders])
        .catch((e: unknown) => e)) as Error;
      expect(error.message).toMatch(
        new RegExp(
          `^exchange '${missing}' does not exist in RabbitMQ at 127\\.0\\.0\\.1:5672 \\(vhost /\\), and the sink may not declare it \\(.*ACCESS_REFUSED.*\\): declare it, or grant the user the configure permission$`,
        ),
      );
      expect(error.message).not.toContain(password);
    } finally {
      ctl('delete_user', user);
    }
  });

  it('declares an exchange deleted while it runs again, after failing the batch that met its absence', async () => {
    const p = await pipeline();
    const sink = await p.open();
    await sink.applyBatch({ changes: inserts(tx(1), 1, 1), commitLsn: tx(1).end, epoch: 1 });
    await channel.deleteExchange(p.exchange);
    await expect(
      sink.applyBatch({ changes: inserts(tx(2), 2, 1), commitLsn: tx(2).end, epoch: 1 }),
    ).rejects.toThrow(
      `closed the channel: Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no exchange '${p.exchange}' in vhost '/'"`,
    );
    expect(await sink.readCheckpoint()).toEqual({ lsn: tx(1).end, epoch: 1 });
    // The sink declares it again; the queue's binding went with the old one, so the retried batch
    // finds no queue (mandatory) until a queue is bound again.
    const retried = { changes: inserts(tx(2), 2, 1), commitLsn: tx(2).end, epoch: 1 };
    await expect(sink.applyBatch(retried)).rejects.toThrow(/no queue took message/);
    await channel.checkExchange(p.exchange);
    const again = await p.queue('#');
    await sink.applyBatch(retried);
    expect((await p.read(again)).map((e) => e.after?.id)).toEqual([2]);
    expect(await sink.readCheckpoint()).toEqual({ lsn: tx(2).end, epoch: 1 });
  });
});
