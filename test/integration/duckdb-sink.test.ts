import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAccessPolicy, NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { ChangeEvent, Row, TableSchema } from '../../src/core/change.js';
import { copyTextOf } from '../../src/core/copy-text.js';
import type { Sink } from '../../src/core/sink.js';
import { duckdbConnectionType } from '../../src/sinks/duckdb/duckdb-connection-type.js';
import { createDuckdbSink } from '../../src/sinks/duckdb/duckdb-sink.js';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { copyText, ev, lines, orderRows, orders, tx } from '../support/message-sink-fixtures.js';
import { col, tableOf } from '../support/table-schemas.js';

describe('duckdb sink, through the sink contract', () => {
  let root: string;
  let policy: LocalAccessPolicy;
  const opened: Sink[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'duckdb-sink-'));
    policy = { ...NO_LOCAL_ACCESS, dataDir: root, duckdbDirs: [root] };
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** A fresh pipeline on its own file (or a given one). */
  async function pipeline(file = `${randomUUID()}.duckdb`, properties: Record<string, string> = {}) {
    const pipelineId = randomUUID();
    const settings = await duckdbConnectionType.settings(`duckdb:${file}`, { tls: {} }, policy);
    const open = async (tables: TableSchema[] = [orders, lines], id = pipelineId) => {
      const sink = createDuckdbSink({
        pipelineId: id,
        connection: settings,
        properties,
        state: memorySinkState(),
      });
      opened.push(sink);
      await sink.open(tables);
      return sink;
    };
    /** Rows of a target table, every value as DuckDB prints it as text, ordered by the first column. */
    const read = async (table: string): Promise<Record<string, string | null>[]> => {
      const instance = await acquireInstance(settings.path);
      const conn = await instance.connect();
      try {
        const columns = (
          await conn.runAndReadAll(
            `SELECT column_name FROM information_schema.columns WHERE table_schema || '.' || table_name = $1 ORDER BY ordinal_position`,
            [table],
          )
        ).getRowsJS();
        const list = columns.map((c) => `CAST("${c[0]}" AS VARCHAR) AS "${c[0]}"`).join(', ');
        const reader = await conn.runAndReadAll(`SELECT ${list} FROM ${table} ORDER BY 1`);
        return reader.getRowObjectsJS() as Record<string, string | null>[];
      } finally {
        conn.closeSync();
        await releaseInstance(settings.path);
      }
    };
    return { pipelineId, settings, open, read };
  }

  const batch = (changes: ChangeEvent[], n: number, epoch = 1) => ({ changes, commitLsn: tx(n).end, epoch });

  const typed = tableOf(
    [
      col('id', 'bigint', { isKey: true }),
      col('n38', 'numeric(38,10)'),
      col('nfree', 'numeric'),
      col('ts', 'timestamp without time zone'),
      col('tstz', 'timestamp with time zone'),
      col('d', 'date'),
      col('tm', 'time without time zone'),
      col('tmtz', 'time with time zone'),
      col('iv', 'interval'),
      col('u', 'uuid'),
      col('j', 'jsonb'),
      col('b', 'bytea'),
      col('f4', 'real'),
      col('f8', 'double precision'),
      col('ok', 'boolean'),
      col('ints', 'integer[]'),
      col('texts', 'text[]'),
      col('floats', 'double precision[]'),
      col('mood', 'mood'),
    ],
    ['id'],
    { schema: 'public', table: 'typed' },
  );

  it('round-trips 64-bit integers, numerics, time zones, BC and infinite dates, bytea, NaN and infinities', async () => {
    const p = await pipeline();
    const sink = await p.open([typed]);
    const row: Row = {
      id: '9223372036854775807',
      n38: '1234567890123456789012345678.0123456789',
      nfree: '123456789012345678901234567890123456789012345678901234567890.123456789',
      ts: '0044-03-15 12:00:00.123456 BC',
      tstz: '2024-01-02 03:04:05.678901+00',
      d: 'infinity',
      tm: '24:00:00',
      tmtz: '12:00:00.123456+05:30',
      iv: '1 year 2 mons -3 days -04:05:06.5',
      u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      j: '{"a": [1, 2.5, "x"], "big": 12345678901234567890}',
      b: '\\x00ff10',
      f4: 'NaN',
      f8: '-Infinity',
      ok: 't',
      ints: '{1,NULL,-2147483648}',
      texts: '{"a,b","c\\"d",NULL}',
      floats: '{NaN,1.5}',
      mood: 'happy',
    };
    const snapshot = Readable.from([copyTextOf([typed.columns.map((c) => row[c.name] ?? null)])]);
    await sink.writeSnapshotPartition(typed, { table: typed, partitionId: '0' }, snapshot);
    const other: Row = {
      ...row,
      id: '-9223372036854775808',
      d: '0001-01-01 BC',
      tstz: '-infinity',
      f8: 'Infinity',
      f4: '1.5',
    };
    await sink.applyBatch(batch([{ ...ev(tx(1), { op: 'insert', after: other }), table: typed }], 1));
    const [low, high] = await p.read('public.typed');
    expect(high).toEqual({
      id: '9223372036854775807',
      n38: '1234567890123456789012345678.0123456789',
      nfree: row.nfree,
      ts: '0044-03-15 (BC) 12:00:00.123456',
      tstz: '2024-01-02 03:04:05.678901+00',
      d: 'infinity',
      tm: '24:00:00',
      tmtz: '12:00:00.123456+05:30',
      iv: '1 year 2 months -3 days -04:05:06.5',
      u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      j: '{"a": [1, 2.5, "x"], "big": 12345678901234567890}',
      b: '\\x00\\xFF\\x10',
      f4: 'nan',
      f8: '-inf',
      ok: 'true',
      ints: '[1, NULL, -2147483648]',
      texts: "['a,b', 'c\"d', NULL]",
      floats: '{NaN,1.5}',
      mood: 'happy',
    });
    expect(low).toMatchObject({
      id: '-9223372036854775808',
      d: '0001-01-01 (BC)',
      tstz: '-infinity',
      f8: 'inf',
      f4: '1.5',
    });
  });

  it('refuses a value its column cannot hold, naming the table and key, and writes nothing of the batch', async () => {
    const money = tableOf(
      [col('id', 'integer', { isKey: true }), col('amount', 'numeric(10,2)'), col('grid', 'integer[]')],
      ['id'],
      {
        schema: 'public',
        table: 'money',
      },
    );
    const p = await pipeline();
    const sink = await p.open([money]);
    const ins = (id: string, amount: string, grid: string | null = null): ChangeEvent => ({
      ...ev(tx(1), { op: 'insert', after: { id, amount, grid } }),
      table: money,
    });
    const nan = sink.applyBatch(batch([ins('1', '1.00'), ins('2', 'NaN')], 1));
    await expect(nan).rejects.toBeInstanceOf(RefusedChangeError);
    await expect(nan).rejects.toThrow(/public\.money with key \(id\)=\(2\).*amount/);
    const grid = sink.applyBatch(batch([ins('3', '1.00', '{{1,2},{3,4}}')], 1));
    await expect(grid).rejects.toThrow(/public\.money with key \(id\)=\(3\).*multi-dimensional/);
    const bounded = sink.applyBatch(batch([ins('5', '1.00', '[0:1]={1,2}')], 1));
    await expect(bounded).rejects.toThrow(
      /public\.money with key \(id\)=\(5\): grid: .*lower bound is not 1/,
    );
    expect(await p.read('public.money')).toEqual([]);
    expect(await sink.readCheckpoint()).toBeNull();
    // The sink goes on after a refusal.
    await sink.applyBatch(batch([ins('4', '4.00', '{1}')], 2));
    expect(await p.read('public.money')).toEqual([{ id: '4', amount: '4.00', grid: '[1]' }]);
  });

  it('plans and applies schema changes in one transaction, skipping what the table already has', async () => {
    const p = await pipeline(undefined, { table_id: 'wh.{table}' });
    const sink = await p.open([orders]);
    await sink.writeSnapshotPartition(orders, { table: orders, partitionId: '0' }, copyText(orderRows(1, 2)));
    const statements = sink.planSchemaChange(orders, [
      { kind: 'add_column', column: 'added', type: 'bigint', nullable: false, existing_value: '42' },
      { kind: 'rename_column', from: 'note', to: 'remark' },
      { kind: 'drop_column', column: 'total' },
    ]);
    expect(statements).toEqual([
      'ALTER TABLE "wh"."orders" ADD COLUMN "added" BIGINT',
      'ALTER TABLE "wh"."orders" RENAME COLUMN "note" TO "remark"',
      'ALTER TABLE "wh"."orders" DROP COLUMN "total"',
      'UPDATE "wh"."orders" SET "added" = CAST(\'42\' AS BIGINT)',
    ]);
    const proposed = tableOf(
      [col('id', 'integer', { isKey: true }), col('remark', 'text'), col('added', 'bigint')],
      ['id'],
      { schema: 'public', table: 'orders' },
    );
    expect(await sink.applySchemaChange(proposed, statements)).toEqual({ skipped: [] });
    expect(await p.read('wh.orders')).toEqual([
      { id: '1', remark: 'n', added: '42' },
      { id: '2', remark: 'n', added: '42' },
    ]);
    // Applied again (a retry after a crash): the column changes are there already.
    expect((await sink.applySchemaChange(proposed, statements)).skipped).toEqual([
      statements[0],
      statements[1],
      statements[2],
    ]);
    await sink.applyBatch(
      batch(
        [{ ...ev(tx(1), { op: 'insert', after: { id: '3', remark: 'r', added: '7' } }), table: proposed }],
        1,
      ),
    );
    expect(await p.read('wh.orders')).toHaveLength(3);

    // A new key: the table is rebuilt under it.
    const rekey = sink.planSchemaChange(proposed, [
      { kind: 'change_key', from: ['id'], to: ['id', 'added'] },
    ]);
    const rekeyed = { ...proposed, keyColumns: ['id', 'added'] };
    await sink.applySchemaChange(rekeyed, rekey);
    await sink.applyBatch(
      batch(
        [{ ...ev(tx(2), { op: 'insert', after: { id: '3', remark: 's', added: '8' } }), table: rekeyed }],
        2,
      ),
    );
    expect((await p.read('wh.orders')).filter((r) => r.id === '3')).toEqual([
      { id: '3', remark: 'r', added: '7' },
      { id: '3', remark: 's', added: '8' },
    ]);
  });

  it('closes only once the batches in flight are whole, and a reopened sink replays to the same rows', async () => {
    const p = await pipeline();
    const sink = await p.open([orders]);
    const big = (n: number, from: number) =>
      batch(
        orderRows(from, from + 1999).map((after) => ev(tx(n), { op: 'insert', after })),
        n,
      );
    const first = sink.applyBatch(big(1, 1));
    const second = sink.applyBatch(big(2, 2001));
    const closing = sink.close();
    const outcomes = await Promise.allSettled([first, second]);
    await closing;
    const reopened = await p.open([orders]);
    const checkpoint = await reopened.readCheckpoint();
    const rows = await p.read('public.orders');
    // Whatever got through is whole batches, with the checkpoint of the last one.
    const applied = outcomes.filter((o) => o.status === 'fulfilled').length;
    expect(rows).toHaveLength(applied * 2000);
    expect(checkpoint?.lsn ?? null).toBe(applied === 0 ? null : tx(applied).end);
    // The runtime replays from the checkpoint: every batch once more, no doubles.
    if (applied < 2) await reopened.applyBatch(big(2, 2001));
    if (applied < 1) await reopened.applyBatch(big(1, 1));
    await reopened.applyBatch(big(2, 2001));
    expect(new Set((await p.read('public.orders')).map((r) => r.id)).size).toBe(4000);
    expect(await p.read('public.orders')).toHaveLength(4000);
  });

  it('keeps whole batches and their checkpoint when its process is killed mid-stream', async () => {
    const p = await pipeline();
    // A writer in its own process, applying batches of 500 rows until it is killed.
    const child = spawn(
      // node itself, loading TypeScript through tsx, so that the kill reaches the writer.
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { createDuckdbSink } from './src/sinks/duckdb/duckdb-sink.ts';
         import { memorySinkState } from './test/support/memory-sink-state.ts';
         import { ev, orderRows, orders, tx } from './test/support/message-sink-fixtures.ts';
         const sink = createDuckdbSink({ pipelineId: ${JSON.stringify(p.pipelineId)}, connection: { path: ${JSON.stringify(p.settings.path)} }, properties: {}, state: memorySinkState() });
         await sink.open([orders]);
         for (let n = 1; ; n++) {
           const changes = orderRows(n * 1000, n * 1000 + 499).map((after) => ev(tx(n), { op: 'insert', after }));
           await sink.applyBatch({ changes, commitLsn: tx(n).end, epoch: 1 });
           console.log('applied ' + n);
         }`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let applied = 0;
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        for (const m of d.toString().matchAll(/applied (\d+)/g)) applied = Number(m[1]);
        if (applied >= 3) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', (code) =>
        applied >= 3 ? resolve() : reject(new Error(`the writer exited (${code})`)),
      );
    });
    await new Promise((resolve) => child.once('exit', resolve).exitCode !== null && resolve(null));
    const sink = await p.open([orders]);
    const checkpoint = await sink.readCheckpoint();
    const done =
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].filter((n) => checkpoint && tx(n).end === checkpoint.lsn)[0] ?? 0;
    expect(done).toBeGreaterThanOrEqual(applied);
    const rows = await p.read('public.orders');
    // Exactly the batches up to the checkpoint: none torn, none past it.
    expect(rows).toHaveLength(done * 500);
    expect(new Set(rows.map((r) => Math.floor(Number(r.id) / 1000)))).toEqual(
      new Set(Array.from({ length: done }, (_, i) => i + 1)),
    );
  }, 120_000);

  it('says plainly that another process holds the file', async () => {
    const p = await pipeline();
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         const i = await DuckDBInstance.create(${JSON.stringify(p.settings.path)});
         const c = await i.connect();
         await c.run('CREATE TABLE held (x INT)');
         // Kept reachable: a collected instance closes its file and lets go of the lock.
         globalThis.held = [i, c];
         console.log('ready');
         setInterval(() => {}, 1000);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.on('exit', () => reject(new Error('the holder exited')));
      });
      await expect(p.open([orders])).rejects.toThrow(/held by another process/);
    } finally {
      child.kill();
    }
  });
});
