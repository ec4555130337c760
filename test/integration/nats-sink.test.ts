import { randomUUID } from 'node:crypto';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { TableSchema } from '../../src/core/change.js';
import type { Sink, SinkStateStore } from '../../src/core/sink.js';
import { AppError } from '../../src/errors/app-error.js';
import { freePort } from '../../src/net/free-port.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { natsConnectionType } from '../../src/sinks/nats/nats-connection-type.js';
import { createNatsSink } from '../../src/sinks/nats/nats-sink.js';
import { preflightNatsSink } from '../../src/sinks/nats/preflight.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { ev, lines, orders, type Tx, tx } from '../support/message-sink-fixtures.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const NATS_URL = 'nats://127.0.0.1:4222';

/** A message as stored: its `Nats-Msg-Id` header and its envelope. */
interface Stored {
  msgId: string | undefined;
  envelope: ChangeEnvelope;
}

const suffix = () => randomUUID().replaceAll('-', '').slice(0, 10);

describe('nats sink, through the sink contract', () => {
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const opened: Sink[] = [];
  const streams: string[] = [];

  /** A fresh pipeline: its own stream, subjects and bookkeeping. */
  function pipeline(properties: Record<string, string> = {}, connection = NATS_URL) {
    const pipelineId = randomUUID();
    const tag = suffix();
    const stream = `TEST_${tag}`;
    const prefix = `test${tag}`;
    streams.push(stream);
    const props = { subject: `${prefix}.{schema}.{table}`, stream, ...properties };
    const state = memorySinkState();
    const open = async (tables: TableSchema[] = [orders, lines], store: SinkStateStore = state) => {
      const settings = await natsConnectionType.settings(connection, { tls: {} }, NO_LOCAL_ACCESS);
      const sink = createNatsSink({ pipelineId, connection: settings, properties: props, state: store });
      opened.push(sink);
      await sink.open(tables);
      return sink;
    };
    /** Every message stored on a table's subject, in stream order. */
    const read = async (table: TableSchema = orders): Promise<Stored[]> => {
      const subject = `${prefix}.${table.schema}.${table.table}`;
      const info = await jsm.streams.info(stream, { subjects_filter: subject });
      const count = info.state.subjects?.[subject] ?? 0;
      const out: Stored[] = [];
      if (count === 0) return out;
      const consumer = await js.consumers.get(stream, { filter_subjects: subject });
      while (out.length < count) {
        const messages = await consumer.fetch({ max_messages: count - out.length, expires: 5_000 });
        for await (const m of messages) {
          out.push({ msgId: m.headers?.get('Nats-Msg-Id'), envelope: m.json<ChangeEnvelope>() });
        }
      }
      return out;
    };
    return { pipelineId, stream, prefix, state, open, read };
  }

  beforeAll(async () => {
    nc = await connect({ servers: '127.0.0.1:4222' });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    for (const stream of streams) await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  it('creates a missing stream capturing the subject template, with the duplicate window', async () => {
    const p = pipeline({ duplicate_window_ms: '300000' });
    await p.open();
    const { config } = await jsm.streams.info(p.stream);
    expect(config.subjects).toEqual([`${p.prefix}.*.*`]);
    expect(config.duplicate_window).toBe(300_000 * 1_000_000);
    expect(config.storage).toBe('file');
    // Opening again uses the stream as it is.
    await p.open();
    expect((await jsm.streams.info(p.stream)).config.subjects).toEqual([`${p.prefix}.*.*`]);
  });

  it('uses an existing stream only when it captures every subject, and says what is missing', async () => {
    const p = pipeline();
    await jsm.streams.add({ name: p.stream, subjects: [`${p.prefix}.public.orders`] });
    await expect(p.open()).rejects.toThrow(
      `stream ${p.stream} does not capture subject ${p.prefix}.shop.lines: add it to the stream's subjects`,
    );
    const sink = await p.open([orders]);
    await sink.applyBatch({
      changes: [ev(tx(1), { op: 'insert', after: { id: '1' } })],
      commitLsn: tx(1).end,
      epoch: 1,
    });
    expect((await p.read()).map((m) => m.envelope.after?.id)).toEqual([1]);

    // A subject another stream captures is refused by name.
    const other = pipeline({ subject: `${p.prefix}.{schema}.{table}` });
    await expect(other.open([orders])).rejects.toThrow(
      `subject ${p.prefix}.public.orders is captured by stream ${p.stream}, not by stream ${other.stream}`,
    );
  });

  it('does not create a stream capturing every subject of a bare {schema}.{table}', async () => {
    const p = pipeline({ subject: '{schema}.{table}' });
    await expect(p.open()).rejects.toThrow(
      /does not create a stream capturing every subject of the form \*\.\*/,
    );
    await expect(jsm.streams.info(p.stream)).rejects.toThrow();
  });

  it('checks a definition against the server before it is stored, changing nothing', async () => {
    const settings = await natsConnectionType.settings(NATS_URL, { tls: {} }, NO_LOCAL_ACCESS);
    const refusal = (props: Record<string, string>) =>
      preflightNatsSink(settings, props, [orders, lines], 2_000).then(
        () => undefined,
        (error: unknown) => {
          expect(error).toBeInstanceOf(AppError);
          return error as AppError;
        },
      );
    const p = pipeline();
    // A stream the sink would create: fine, and not created yet.
    expect(await refusal({ subject: `${p.prefix}.{schema}.{table}`, stream: p.stream })).toBeUndefined();
    await expect(jsm.streams.info(p.stream)).rejects.toThrow();

    await jsm.streams.add({ name: p.stream, subjects: [`${p.prefix}.public.orders`] });
    const missing = await refusal({ subject: `${p.prefix}.{schema}.{table}`, stream: p.stream });
    expect(missing?.details).toEqual({ field: 'sink.properties.stream' });
    expect(missing?.message).toContain(`stream ${p.stream} does not capture subject ${p.prefix}.shop.lines`);
    const elsewhere = await refusal({ subject: `${p.prefix}.{schema}.{table}`, stream: `${p.stream}_2` });
    expect(elsewhere?.details).toEqual({ field: 'sink.properties.subject' });
    expect(elsewhere?.message).toContain(`is captured by stream ${p.stream}`);
    const wild = await refusal({ subject: '{schema}.{table}', stream: `${p.stream}_3` });
    expect(wild?.details).toEqual({ field: 'sink.properties.subject' });

    // A server out of reach is not judged now: the sink checks again as it opens.
    const down = await natsConnectionType.settings(
      `nats://127.0.0.1:${await freePort()}`,
      { tls: {} },
      NO_LOCAL_ACCESS,
    );
    await expect(preflightNatsSink(down, { stream: p.stream }, [orders], 2_000)).resolves.toBeUndefined();
  });

  it('publishes inserts, updates, deletes and truncates as envelopes with their ids, then the checkpoint', async () => {
    const p = pipeline();
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
    expect(await p.state.readCheckpoint()).toEqual({ lsn: t3.end, epoch: 1, detail: {} });

    const base = (t: Tx, n: number, path = 'public/orders') => ({
      id: `${t.lsnText}/${path}/${n}`,
      lsn: t.lsnText,
      commit_time: t.commitTime,
    });
    const orderMessages = await p.read(orders);
    expect(orderMessages.every((m) => m.msgId === m.envelope.id)).toBe(true);
    expect(orderMessages.map((m) => m.envelope)).toEqual([
      {
        ...base(t1, 0),
        op: 'insert',
        table: 'public.orders',
        key: { id: 1 },
        before: null,
        after: { id: 1, total: '9.99', note: 'hello' },
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
    ]);
    expect((await p.read(lines)).map((m) => m.envelope)).toEqual([
      {
        ...base(t1, 0, 'shop/lines'),
        op: 'insert',
        table: 'shop.lines',
        key: { id: '9007199254740993' },
        before: null,
        after: { id: '9007199254740993', sku: 'X' },
      },
      {
        ...base(t3, 0, 'shop/lines'),
        op: 'truncate',
        table: 'shop.lines',
        key: null,
        before: null,
        after: null,
      },
    ]);
  });

  it('keeps the order of a batch larger than the publications in flight', async () => {
    const p = pipeline();
    const sink = await p.open();
    const t1 = tx(1);
    await sink.applyBatch({
      changes: Array.from({ length: 3000 }, (_, i) => ev(t1, { op: 'insert', after: { id: String(i) } })),
      commitLsn: t1.end,
      epoch: 1,
    });
    const stored = await p.read();
    expect(stored.map((m) => m.envelope.after?.id)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(stored.at(-1)?.msgId).toBe(`${t1.lsnText}/public/orders/2999`);
  });

  it('never moves the checkpoint back for a batch replayed under an older position', async () => {
    const p = pipeline();
    const sink = await p.open();
    const [t1, t2] = [tx(1), tx(2)];
    await sink.applyBatch({
      changes: [ev(t2, { op: 'insert', after: { id: '2' } })],
      commitLsn: t2.end,
      epoch: 1,
    });
    await sink.applyBatch({
      changes: [ev(t1, { op: 'insert', table: lines, after: { id: '1', sku: 'held' } })],
      commitLsn: t1.end,
      epoch: 1,
    });
    expect(await sink.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
  });

  it('stores the checkpoint only once every message is acknowledged', async () => {
    const p = pipeline();
    const sink = await p.open();
    const [t1, t2] = [tx(1), tx(2)];
    await sink.applyBatch({
      changes: [ev(t1, { op: 'insert', after: { id: '1' } })],
      commitLsn: t1.end,
      epoch: 1,
    });
    // The stream goes away under the sink: nothing acknowledges the next batch.
    await jsm.streams.delete(p.stream);
    await expect(
      sink.applyBatch({
        changes: [ev(t2, { op: 'insert', after: { id: '2' } })],
        commitLsn: t2.end,
        epoch: 1,
      }),
    ).rejects.toThrow(`no JetStream stream captures subject ${p.prefix}.public.orders`);
    expect(await sink.readCheckpoint()).toEqual({ lsn: t1.end, epoch: 1 });
  });

  it('refuses a message larger than the server takes, before publishing any of the batch', async () => {
    const p = pipeline();
    const sink = await p.open();
    const t1 = tx(1);
    const refused = sink.applyBatch({
      changes: [
        ev(t1, { op: 'insert', after: { id: '1', note: 'small' } }),
        ev(t1, { op: 'insert', after: { id: '2', note: 'x'.repeat(1024 * 1024) } }),
      ],
      commitLsn: t1.end,
      epoch: 1,
    });
    await expect(refused).rejects.toBeInstanceOf(RefusedChangeError);
    await expect(refused).rejects.toThrow(/the change of public\.orders with key \(id\)=\(2\).*max_payload/);
    expect(await p.read()).toEqual([]);
    expect(await sink.readCheckpoint()).toBeNull();
  });

  it('fails with an unreachable error, not a hang, when NATS cannot be reached', async () => {
    const port = await freePort();
    const p = pipeline({}, `nats://127.0.0.1:${port}`);
    // Refused at once: a hang would meet the test's own timeout.
    const failure = await p.open().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain(
      `cannot connect to NATS at 127.0.0.1:${port}: connection refused`,
    );
    expect(isUnreachable(failure)).toBe(true);
  });

  it('refuses to go on in plain text when tls:// asks for TLS', async () => {
    const p = pipeline({}, 'tls://127.0.0.1:4222');
    const failure = await p.open().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe(
      "cannot connect to NATS at 127.0.0.1:4222: server does not support 'tls'",
    );
    // A server that does not do what the DSN asks needs a person, not endless retries.
    expect(isUnreachable(failure)).toBe(false);
    await expect(jsm.streams.info(p.stream)).rejects.toThrow();
  });

  it('fails a batch at once when the connection is lost, as unreachable, and checkpoints nothing', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', 4222);
    try {
      const p = pipeline({}, `nats://127.0.0.1:${proxy.listenPort}`);
      const sink = await p.open();
      const [t1, t2] = [tx(1), tx(2)];
      await sink.applyBatch({
        changes: [ev(t1, { op: 'insert', after: { id: '1' } })],
        commitLsn: t1.end,
        epoch: 1,
      });
      await proxy.down();
      // Fails rather than hangs: a hang would meet the test's own timeout.
      const failure = await sink
        .applyBatch({
          changes: Array.from({ length: 2000 }, (_, i) =>
            ev(t2, { op: 'insert', after: { id: String(i + 10) } }),
          ),
          commitLsn: t2.end,
          epoch: 1,
        })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(Error);
      expect(isUnreachable(failure)).toBe(true);
      expect(await sink.readCheckpoint()).toEqual({ lsn: t1.end, epoch: 1 });
      await sink.close();
      await sink.close();
    } finally {
      await proxy.stop();
    }
  });
});
