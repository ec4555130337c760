import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { redisConnectionType } from '../../src/connections/redis-connection-type.js';
import type { TableSchema } from '../../src/core/change.js';
import { formatLsn } from '../../src/core/lsn.js';
import { FencedError, type Sink } from '../../src/core/sink.js';
import { freePort } from '../../src/net/free-port.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { createRedisSink } from '../../src/sinks/redis/redis-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import {
  copyLines,
  copyText,
  ev,
  lines,
  orderRows,
  orders,
  type Tx,
  tx,
} from '../support/message-sink-fixtures.js';

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

  it('publishes snapshot partitions as read events, and a restarted snapshot skips the done ones', async () => {
    const p = pipeline();
    const sink = await p.open();
    expect(await sink.readCheckpoint()).toBeNull();
    expect(await sink.snapshotPartitionsDone()).toEqual([]);
    expect(
      await sink.writeSnapshotPartition(
        orders,
        { table: orders, partitionId: '0' },
        copyText(orderRows(1, 3)),
      ),
    ).toBe(3);

    // The second partition fails after its first chunk (500 rows) went out: a crash mid-partition.
    async function* failing() {
      yield copyLines(orderRows(4, 1003));
      throw new Error('source connection lost');
    }
    await expect(
      sink.writeSnapshotPartition(orders, { table: orders, partitionId: '1' }, Readable.from(failing())),
    ).rejects.toThrow('source connection lost');
    await sink.close();

    const again = await p.open();
    expect(await again.snapshotPartitionsDone()).toEqual([
      { table: { schema: 'public', table: 'orders' }, partitionId: '0' },
    ]);
    const partial = await p.read();
    expect(partial.length).toBe(503);
    expect(
      await again.writeSnapshotPartition(
        orders,
        { table: orders, partitionId: '1' },
        copyText(orderRows(4, 1003)),
      ),
    ).toBe(1000);
    expect((await again.snapshotPartitionsDone()).map((d) => d.partitionId).sort()).toEqual(['0', '1']);
    await again.finishSnapshot(orders);

    const events = await p.read();
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
    // The rows of the failed attempt come again under the same ids: consumers drop them by id.
    expect(events.length).toBe(1503);
    const ids = new Set(events.map((e) => e.id));
    expect(ids.size).toBe(1003);
    expect(events.every((e) => e.op === 'read')).toBe(true);
  });

  it("forgets only the reset table's partition markers, and leaves its stream to the consumers", async () => {
    const p = pipeline();
    const sink = await p.open();
    await sink.writeSnapshotPartition(orders, { table: orders, partitionId: '0' }, copyText(orderRows(1, 2)));
    await sink.writeSnapshotPartition(
      lines,
      { table: lines, partitionId: '0' },
      copyText([{ id: '1', sku: 'A' }], lines),
    );
    await sink.resetTable(orders);
    expect(await sink.snapshotPartitionsDone()).toEqual([
      { table: { schema: 'shop', table: 'lines' }, partitionId: '0' },
    ]);
    expect((await p.read()).length).toBe(2);
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

  it('publishes nothing twice when a transaction written in pieces is replayed whole after a crash', async () => {
    const p = pipeline();
    const t1 = tx(1);
    const t2 = tx(2);
    const first = await p.open();
    await first.applyBatch({
      changes: [ev(t1, { op: 'insert', after: { id: '1' } })],
      commitLsn: t1.end,
      epoch: 1,
    });
    // t2 is too large for one batch: its pieces go under the checkpoint before it.
    const t2changes = [
      ...[11, 12, 13].map((id) => ev(t2, { op: 'insert', after: { id: String(id) } })),
      ev(t2, { op: 'insert', table: lines, after: { id: '1', sku: 'A' } }),
      ...[14, 15].map((id) => ev(t2, { op: 'insert', after: { id: String(id) } })),
    ];
    await first.applyBatch({ changes: t2changes.slice(0, 2), commitLsn: t1.end, epoch: 1 });
    await first.applyBatch({ changes: t2changes.slice(2, 4), commitLsn: t1.end, epoch: 1 });
    expect(await first.readCheckpoint()).toEqual({ lsn: t1.end, epoch: 1 });
    await first.close(); // a crash before the rest of t2

    // The stream starts again at the checkpoint: t2 comes whole from its start, cut otherwise.
    const second = await p.open();
    await second.applyBatch({ changes: t2changes.slice(0, 1), commitLsn: t1.end, epoch: 1 });
    await second.close(); // and a crash again, having got less far than the first run
    const third = await p.open();
    await third.applyBatch({ changes: t2changes.slice(0, 5), commitLsn: t1.end, epoch: 1 });
    await third.applyBatch({ changes: t2changes.slice(5), commitLsn: t2.end, epoch: 1 });

    const orderIds = (await p.read(orders)).map((e) => e.id);
    expect(orderIds).toEqual([
      `${t1.lsnText}/public/orders/0`,
      ...[0, 1, 2, 3, 4].map((n) => `${t2.lsnText}/public/orders/${n}`),
    ]);
    expect((await p.read(orders)).map((e) => e.after?.id)).toEqual([1, 11, 12, 13, 14, 15]);
    expect((await p.read(lines)).map((e) => e.id)).toEqual([`${t2.lsnText}/shop/lines/0`]);
    expect(await third.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
    expect(await admin.hgetall(`replicator:${p.pipelineId}:checkpoint`)).toEqual({
      lsn: formatLsn(t2.end),
      epoch: '1',
    });
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

  it('refuses a batch from an older epoch, writing nothing', async () => {
    const p = pipeline();
    const newer = await p.open();
    const older = await p.open();
    const t1 = tx(1);
    const t2 = tx(2);
    await newer.applyBatch({
      changes: [ev(t1, { op: 'insert', after: { id: '1' } })],
      commitLsn: t1.end,
      epoch: 2,
    });
    const refused = older.applyBatch({
      changes: [ev(t2, { op: 'insert', after: { id: '2' } })],
      commitLsn: t2.end,
      epoch: 1,
    });
    await expect(refused).rejects.toBeInstanceOf(FencedError);
    await expect(refused).rejects.toMatchObject({ storedEpoch: 2, writerEpoch: 1 });
    expect((await p.read()).map((e) => e.after?.id)).toEqual([1]);
    expect(await older.readCheckpoint()).toEqual({ lsn: t1.end, epoch: 2 });
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
    const started = Date.now();
    await expect(sink.open([orders])).rejects.toThrow(
      `cannot reach Redis at 127.0.0.1:${port}: connect ECONNREFUSED`,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
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
    const [client] = String(await admin.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(`name=${name}`))
      .map((line) => /id=(\d+)/.exec(line)?.[1]);
    expect(client).toBeDefined();
    await admin.client('KILL', 'ID', client as string);
    await new Promise((resolve) => setTimeout(resolve, 100));
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
