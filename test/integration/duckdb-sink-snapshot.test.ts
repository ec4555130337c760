import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { ColumnValue, TableSchema } from '../../src/core/change.js';
import { copyTextOf } from '../../src/core/copy-text.js';
import type { Sink } from '../../src/core/sink.js';
import { duckdbConnectionType } from '../../src/sinks/duckdb/duckdb-connection-type.js';
import { createDuckdbSink } from '../../src/sinks/duckdb/duckdb-sink.js';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { col, tableOf } from '../support/table-schemas.js';

/** Snapshot partitions go to DuckDB's CSV reader as COPY text, untouched where they can be. */
describe('duckdb sink snapshot', () => {
  let root: string;
  const opened: Sink[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'duckdb-snapshot-'));
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const items = tableOf(
    [
      col('id', 'bigint', { isKey: true }),
      col('t', 'text'),
      col('ts', 'timestamp with time zone'),
      col('n', 'numeric(10,2)'),
    ],
    ['id'],
    { schema: 'public', table: 'items' },
  );
  const named = tableOf([col('k', 'text', { isKey: true }), col('v', 'text')], ['k'], {
    schema: 'public',
    table: 'named',
  });

  async function open(tables: TableSchema[]) {
    const policy = { ...NO_LOCAL_ACCESS, dataDir: root };
    const settings = await duckdbConnectionType.settings(
      `duckdb:${randomUUID()}.duckdb`,
      { tls: {} },
      policy,
    );
    const sink = createDuckdbSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: {},
      state: memorySinkState(),
    });
    opened.push(sink);
    await sink.open(tables);
    const read = async (sql: string) => {
      const instance = await acquireInstance(settings.path);
      const conn = await instance.connect();
      try {
        return (await conn.runAndReadAll(sql)).getRowsJS();
      } finally {
        conn.closeSync();
        await releaseInstance(settings.path);
      }
    };
    return { sink, read };
  }

  const partition = (sink: Sink, table: TableSchema, id: string, rows: ColumnValue[][]) =>
    sink.writeSnapshotPartition(table, { table, partitionId: id }, Readable.from([copyTextOf(rows)]));

  it('keeps every value as the source wrote it: escapes, NULL and empty text, quotes, BC, a byte order mark', async () => {
    const { sink, read } = await open([items, named]);
    const rows: ColumnValue[][] = [
      ['1', 'plain', '2024-01-02 03:04:05.678901+00', '1.50'],
      ['2', null, null, null],
      ['3', '', '2024-01-02 03:04:05+00', '0.00'],
      ['4', 'tab\there\nnew "line" \\ back\\slash\r', '2024-01-02 03:04:05+00', '-2.25'],
      ['5', '\\N', '0044-03-15 12:00:00+00 BC', '3.00'],
      ['6', '"quoted"', '2024-01-02 03:04:05+00', '4.00'],
      ['7', 'ends in a backslash \\', null, '5.00'],
    ];
    // Lines longer than DuckDB reads by default, one as it is, one with escapes.
    const long: ColumnValue[][] = [
      ['8', 'y'.repeat(3 * 2 ** 20), null, '6.00'],
      ['9', 'z\t'.repeat(2 ** 20), null, '7.00'],
    ];
    expect(await partition(sink, items, '0', [...rows, ...long])).toBe(rows.length + long.length);
    expect(
      await read(
        `SELECT id::VARCHAR, t = repeat('y', 3 * 1024 * 1024) OR t = repeat('z' || chr(9), 1024 * 1024) FROM public.items WHERE id > 7 ORDER BY id`,
      ),
    ).toEqual([
      ['8', true],
      ['9', true],
    ]);
    const back = await read(
      `SELECT id::VARCHAR, t, t IS NULL, strftime(ts AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f'), n::VARCHAR FROM public.items WHERE id <= 7 ORDER BY id`,
    );
    expect(back).toEqual([
      ['1', 'plain', false, '2024-01-02 03:04:05.678901', '1.50'],
      ['2', null, true, null, null],
      ['3', '', false, '2024-01-02 03:04:05.000000', '0.00'],
      ['4', 'tab\there\nnew "line" \\ back\\slash\r', false, '2024-01-02 03:04:05.000000', '-2.25'],
      ['5', '\\N', false, '-43-03-15 12:00:00.000000', '3.00'],
      ['6', '"quoted"', false, '2024-01-02 03:04:05.000000', '4.00'],
      ['7', 'ends in a backslash \\', false, null, '5.00'],
    ]);
    // A byte order mark starting the data is the key's, and one empty value a whole line.
    const bom = [
      ['\uFEFFfirst', 'x'],
      ['second', ''],
    ];
    expect(await partition(sink, named, '0', bom)).toBe(2);
    // Compared in DuckDB: the client's text decoding drops a leading byte order mark.
    expect(await read(`SELECT k, k = chr(65279) || 'first', v FROM public.named ORDER BY v`)).toEqual([
      ['second', false, ''],
      [expect.any(String), true, 'x'],
    ]);
    expect(
      (await sink.snapshotPartitionsDone()).map((p) => `${p.table.table}/${p.partitionId}`).sort(),
    ).toEqual(['items/0', 'named/0']);
  });

  it('refuses a value its column cannot hold naming the key, and writes nothing of the partition', async () => {
    const { sink, read } = await open([items]);
    const write = partition(sink, items, '0', [
      ['1', 'a', null, '1.00'],
      ['2', 'b', null, 'NaN'],
    ]);
    await expect(write).rejects.toBeInstanceOf(RefusedChangeError);
    await expect(write).rejects.toThrow(/public\.items with key \(id\)=\(2\).*"n"/);
    expect(await read('SELECT count(*)::INTEGER FROM public.items')).toEqual([[0]]);
    expect(await sink.snapshotPartitionsDone()).toEqual([]);
    // No file of the partition is left behind.
    expect((await readdir(tmpdir())).filter((f) => f.startsWith('replicator-duckdb-'))).toEqual([]);
  });

  it('converges when a partition is written again, and writes partitions side by side', async () => {
    const { sink, read } = await open([items]);
    // Past one file of text (8 MiB), so that DuckDB loads one while the next is written.
    const long = 'x'.repeat(1000);
    const rowsOf = (from: number, count: number, n: string): ColumnValue[][] =>
      Array.from({ length: count }, (_, i) => [String(from + i), long, null, n]);
    await partition(sink, items, '0', rowsOf(1, 10, '1.00'));
    await Promise.all([
      partition(sink, items, '0', rowsOf(1, 10_000, '2.00')),
      partition(sink, items, '1', rowsOf(10_001, 10_000, '3.00')),
    ]);
    expect(
      await read('SELECT n::VARCHAR, count(*)::INTEGER FROM public.items GROUP BY n ORDER BY n'),
    ).toEqual([
      ['2.00', 10_000],
      ['3.00', 10_000],
    ]);
    expect((await sink.snapshotPartitionsDone()).map((p) => p.partitionId).sort()).toEqual(['0', '1']);
  });
});
