import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { TableSchema } from '../../src/core/change.js';
import type { Sink } from '../../src/core/sink.js';
import { freePort } from '../../src/net/free-port.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { redisConnectionType } from '../../src/sinks/redis/redis-connection-type.js';
import { createRedisSink } from '../../src/sinks/redis/redis-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { ev, lines, orders, type Tx, tx } from '../support/message-sink-fixtures.js';

const REDIS_URL = 'redis://127.0.0.1:6379/0';

describe('redis sink, through the sink contract', () => {
  let admin: Redis;
  const opened: Sink[] = [];
  const prefixes: string[] = [];

  /** A fresh pipeline: its own stream prefix and bookkeeping keys. */
  function pipeline(properties: Record<string, string> = {}) {
    const pipelineId = randomUUID();
    const prefix = `test:${pipelineId.slice(0, 8)}`;
    prefixes.push(prefix, `replicator:${pipelineId}`);
    const props = { stream: `${prefix}:{schema}.{table}`, ...properties };
    const open = async (tables: TableSchema[] = [orders, lines]) => {
      const settings = await redisConnectionType.settings(REDIS_URL, { tls: {} }, NO_LOCAL_ACCESS);
      const sink = createRedisSink({
        pipelineId,
        connection: settings,
        properties: props,
        state: memorySinkState(),
      });
      opened.push(sink);
      await sink.open(tables);
      return sink;
    };
    const read = async (table: TableSchema = orders): Promise<ChangeEnvelope[]> => {
      const entries = await admin.xrange(`${prefix}:${table.schema}.${table.table}`, '-', '+');
      return entries.map(([, fields]) => {
        expect(fields[0]).toBe('event');
        return JSON.parse(fields[1] as string) as ChangeEnvelope;
      });
    };
    return { pipelineId, prefix, open, read };
  }

  beforeAll(async () => {
    admin = new Redis(REDIS_URL);
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    for (const prefix of prefixes) {
      const keys = await admin.keys(`${prefix}:*`);
      if (keys.length > 0) await admin.del(...keys);
    }
    await admin.quit();
  });

  it('publishes inserts, updates, deletes and truncates as envelopes, with the checkpoint', async () => {
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

    const base = (t: Tx, n: number, path = 'public/orders') => ({
      id: `${t.lsnText}/${path}/${n}`,
      lsn: t.lsnText,
      commit_time: t.commitTime,
    });
    expect(await p.read(orders)).toEqual([
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
    expect(await p.read(lines)).toEqual([
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

  it('publishes changes held back while their table was copied again, though older than the checkpoint', async () => {
    const p = pipeline();
    const sink = await p.open();
    const t1 = tx(1);
    const t2 = tx(2);
    await sink.applyBatch({
      changes: [ev(t1, { op: 'insert', after: { id: '1' } }), ev(t2, { op: 'insert', after: { id: '2' } })],
      commitLsn: t2.end,
      epoch: 1,
    });
    // The held changes of `lines` from t1 and t2 come after, under the checkpoint.
    await sink.applyBatch({
      changes: [
        ev(t1, { op: 'insert', table: lines, after: { id: '1', sku: 'A' } }),
        ev(t2, { op: 'insert', table: lines, after: { id: '2', sku: 'B' } }),
      ],
      commitLsn: t2.end,
      epoch: 1,
    });
    expect((await p.read(lines)).map((e) => e.id)).toEqual([
      `${t1.lsnText}/shop/lines/0`,
      `${t2.lsnText}/shop/lines/0`,
    ]);
    expect(await sink.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
  });

  it('refuses a batch whose stream key holds another type, before writing any of it', async () => {
    const p = pipeline();
    await admin.set(`${p.prefix}:shop.lines`, 'not a stream');
    const sink = await p.open();
    const t1 = tx(1);
    await expect(
      sink.applyBatch({
        changes: [
          ev(t1, { op: 'insert', after: { id: '1' } }),
          ev(t1, { op: 'insert', table: lines, after: { id: '1', sku: 'A' } }),
        ],
        commitLsn: t1.end,
        epoch: 1,
      }),
    ).rejects.toThrow(/WRONGTYPE/);
    expect(await p.read()).toEqual([]);
    expect(await sink.readCheckpoint()).toBeNull();
  });

  it('trims each stream to about maxlen entries', async () => {
    const p = pipeline({ maxlen: '10' });
    const sink = await p.open();
    for (let n = 1; n <= 10; n++) {
      const t = tx(n);
      await sink.applyBatch({
        changes: Array.from({ length: 100 }, (_, i) =>
          ev(t, { op: 'insert', after: { id: String(n * 1000 + i) } }),
        ),
        commitLsn: t.end,
        epoch: 1,
      });
    }
    const length = await admin.xlen(`${p.prefix}:public.orders`);
    // Approximate trimming removes whole nodes of the stream: it keeps at least maxlen, far fewer than 1000.
    expect(length).toBeGreaterThanOrEqual(10);
    expect(length).toBeLessThan(300);
    const last = (await p.read()).at(-1);
    expect(last?.id).toBe(`${tx(10).lsnText}/public/orders/99`);
  });

  it('fails with an error, not a hang, when Redis cannot be reached', async () => {
    const port = await freePort();
    const settings = await redisConnectionType.settings(
      `redis://127.0.0.1:${port}/0`,
      { tls: {} },
      NO_LOCAL_ACCESS,
    );
    const sink = createRedisSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: {},
      state: memorySinkState(),
    });
    // Refused at once: a hang would meet the test's own timeout.
    await expect(sink.open([orders])).rejects.toThrow(
      `cannot reach Redis at 127.0.0.1:${port}: connect ECONNREFUSED`,
    );
    await sink.close();
    await sink.close();
  });

  it('fails a batch at once when the connection is lost, rather than queueing it', async () => {
    const name = `replicator-test-${randomUUID()}`;
    const settings = await redisConnectionType.settings(REDIS_URL, { tls: {} }, NO_LOCAL_ACCESS);
    const sink = createRedisSink({
      pipelineId: randomUUID(),
      connection: { ...settings, connectionName: name },
      properties: { stream: `test:${name}:{table}` },
      state: memorySinkState(),
    });
    opened.push(sink);
    await sink.open([orders]);
    const [id] = String(await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(`name=${name}`))
      .map((line) => /id=(\d+)/.exec(line)?.[1]);
    expect(id).toBeDefined();
    await admin.client('KILL', 'ID', id as string);
    // Once the sink's client has seen its connection go (it does not reconnect).
    const client = (sink as unknown as { client: Redis }).client;
    await vi.waitFor(() => expect(client.status).toBe('end'), { timeout: 10_000, interval: 10 });
    const t1 = tx(1);
    await expect(
      sink.applyBatch({
        changes: [ev(t1, { op: 'insert', after: { id: '1' } })],
        commitLsn: t1.end,
        epoch: 1,
      }),
    ).rejects.toThrow();
  });
});
