import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { pgClientConfigOfDsn } from '../../src/connections/pg-client-config.js';
import type { ChangeEvent, ColumnSchema, Row, TableRef, TableSchema } from '../../src/core/change.js';
import type { ChangeBatch, Sink } from '../../src/core/sink.js';
import { MIN_ROWS_FOR_COPY } from '../../src/sinks/postgres/apply-plan.js';
import { createPostgresSink } from '../../src/sinks/postgres/postgres-sink.js';
import { CopyOutStream } from '../../src/source/postgres/copy-out-stream.js';
import { binaryCopyMessages, int64, messageChunks } from '../support/copy-binary.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { createDatabase } from '../support/pg-cluster.js';

/** Builds a source table schema; `*` after a column name marks a key column. */
function tableSchema(schema: string, table: string, columns: [string, string][]): TableSchema {
  const cols: ColumnSchema[] = columns.map(([spec, typeName]) => {
    const isKey = spec.endsWith('*');
    return { name: isKey ? spec.slice(0, -1) : spec, typeName, typeOid: 0, nullable: !isKey, isKey };
  });
  return { schema, table, columns: cols, keyColumns: cols.filter((c) => c.isKey).map((c) => c.name) };
}

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const qualified = (ref: TableRef) => `${q(ref.schema)}.${q(ref.table)}`;

const copyField = (v: string | null) =>
  v === null
    ? '\\N'
    : v.replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
const copyLine = (table: TableSchema, row: Row) =>
  `${table.columns.map((c) => copyField(row[c.name] ?? null)).join('\t')}\n`;

// A text that does not compress, so it is stored out of line (TOAST).
function bigText(length: number, seed: number): string {
  let x = seed;
  let out = '';
  while (out.length < length) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out += String.fromCharCode(33 + (x % 90));
  }
  return `${out}\t\n\\ end`;
}

const typed = tableSchema('src', 'typed', [
  ['id*', 'bigint'],
  ['amount', 'numeric(12,2)'],
  ['ratio', 'double precision'],
  ['at', 'timestamp with time zone'],
  ['local_at', 'timestamp(3) without time zone'],
  ['day', 'date'],
  ['doc', 'jsonb'],
  ['raw', 'json'],
  ['blob', 'bytea'],
  ['ints', 'integer[]'],
  ['words', 'text[]'],
  ['code', 'character varying(20)'],
  ['flag', 'boolean'],
  ['uid', 'uuid'],
  ['span', 'interval'],
  ['ch', '"char"'],
  ['bits', 'bit varying(8)'],
  ['body', 'text'],
]);

/** Rows in their canonical text form, so what is read back must be exactly what was written. */
const trickyRows: Row[] = [
  {
    id: '1',
    amount: '12345.67',
    ratio: '3.141592653589793',
    at: '2024-02-29 23:59:59.123456+00',
    local_at: '2024-01-02 03:04:05.678',
    day: '2024-02-29',
    doc: '{"a": [1, 2.50, "x\\ty"], "é": null}',
    raw: '{ "b" : 1,"a":2 }',
    blob: '\\x00ff5c0a09',
    ints: '{1,2,NULL,-3}',
    words: '{"a b","c\\"d","e\\\\f",NULL,"NULL",""}',
    code: 'tab\there',
    flag: 't',
    uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    span: '1 year 2 mons 3 days 04:05:06.789',
    ch: 'q',
    bits: '1010',
    body: `line1\nline2\r\n\ttab \\ backslash \\N not null 𝄞 中文 ${bigText(20_000, 1)}`,
  },
  {
    id: '-9223372036854775808',
    amount: '-0.10',
    ratio: '1e+300',
    at: '1999-12-31 23:00:00+00',
    local_at: '1970-01-01 00:00:00',
    day: '0001-01-01',
    doc: '[]',
    raw: '"\\u0000-less"',
    blob: '\\x',
    ints: '{}',
    words: '{"{}",","}',
    code: '',
    flag: 'f',
    uid: '00000000-0000-0000-0000-000000000000',
    span: '-00:00:00.000001',
    ch: '\\',
    bits: '',
    body: '',
  },
  { id: '9223372036854775807', ...Object.fromEntries(typed.columns.slice(1).map((c) => [c.name, null])) },
];

const items = tableSchema('src', 'items', [
  ['id*', 'integer'],
  ['name', 'text'],
  ['body', 'text'],
  ['n', 'numeric(12,2)'],
]);
const others = tableSchema('src', 'others', [
  ['k1*', 'text'],
  ['k2*', 'integer'],
  ['v', 'text'],
]);

let lsn = 0x1000;
const meta = () => ({
  commitLsn: 0x1n,
  xid: 1,
  commitTime: '',
});
const ins = (table: TableSchema, after: Row): ChangeEvent => ({ ...meta(), op: 'insert', table, after });
const upd = (table: TableSchema, after: Row, extra: Partial<ChangeEvent> = {}): ChangeEvent => ({
  ...meta(),
  op: 'update',
  table,
  after,
  ...extra,
});
const del = (table: TableSchema, key: Row): ChangeEvent => ({ ...meta(), op: 'delete', table, key });
const _trunc = (...tables: TableSchema[]): ChangeEvent => ({
  ...meta(),
  op: 'truncate',
  table: tables[0] as TableRef,
  tables,
});
const batch = (changes: ChangeEvent[], epoch = 1, commitLsn = BigInt(lsn++)) =>
  ({
    // A change made with meta() takes its transaction's place: the batch's (a sink refuses a batch
    // whose changes its checkpoint already holds).
    changes: changes.map((c) => (c.commitLsn === 0x1n ? { ...c, commitLsn } : c)),
    epoch,
    commitLsn,
  }) satisfies ChangeBatch;

describe.each(inject('pgClusters'))('postgres sink on $label', (cluster) => {
  let url: string;
  let settings: pg.ClientConfig;
  let db: pg.Client;
  const sinks: Sink[] = [];

  beforeAll(async () => {
    url = await createDatabase(cluster.adminUrl, 'postgres_sink');
    settings = await pgClientConfigOfDsn(url);
    db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query("SET TimeZone = 'UTC'");
  });
  afterAll(async () => {
    await Promise.all(sinks.map((s) => s.close()));
    await db?.end();
  });

  function newSink(properties: Record<string, string> = {}, pipelineId: string = randomUUID()): Sink {
    const sink = createPostgresSink({
      pipelineId,
      connection: settings,
      properties,
      state: memorySinkState(),
    });
    sinks.push(sink);
    return sink;
  }

  /** Two workers' sinks of one pipeline into `targetSchema`, both opened on `items`. */
  async function twoWorkers(targetSchema: string): Promise<[Sink, Sink]> {
    const pipelineId = randomUUID();
    const workers: [Sink, Sink] = [
      newSink({ target_schema: targetSchema }, pipelineId),
      newSink({ target_schema: targetSchema }, pipelineId),
    ];
    for (const sink of workers) await sink.open([items]);
    return workers;
  }

  /** Every row of a target in PostgreSQL's text output form (no parsing), ordered by the key. */
  async function readRows(target: TableRef, table: TableSchema): Promise<Row[]> {
    const cols = table.columns.map((c) => q(c.name)).join(', ');
    const order = table.keyColumns.map(q).join(', ');
    const text = `SELECT ${cols} FROM ${qualified(target)} ORDER BY ${order}`;
    return (await db.query<Row>({ text, types: { getTypeParser: () => (value: string) => value } })).rows;
  }

  const count = async (target: TableRef) =>
    Number((await db.query(`SELECT count(*) AS n FROM ${qualified(target)}`)).rows[0].n);

  const sortById = (rows: Row[]) => [...rows].sort((a, b) => Number(BigInt(a.id ?? 0) - BigInt(b.id ?? 0)));

  describe('open', () => {
    it('creates schemas and tables with the source types, NOT NULL and primary key', async () => {
      const sink = newSink();
      await sink.open([typed, items]);
      await sink.open([typed, items]);
      const keyOf = async (table: string) =>
        (
          await db.query(
            `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = '${table}'::regclass`,
          )
        ).rows;
      // The key of a table it creates comes once its snapshot is in: a sorted build, as compact as the source's.
      expect(await keyOf('src.typed')).toEqual([]);
      await sink.finishSnapshot(typed);
      await sink.finishSnapshot(typed);
      // A batch for a table whose snapshot was never declared finished builds its key first.
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'a', body: 'b', n: '1.00' })]));
      expect(await keyOf('src.items')).toEqual([{ def: 'PRIMARY KEY (id)' }]);
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'a2', body: 'b', n: '1.00' })]));
      expect(await count({ schema: 'src', table: 'items' })).toBe(1);
      const { rows } = await db.query<{ attname: string; type: string; notnull: boolean }>(
        `SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull AS notnull FROM pg_attribute
          WHERE attrelid = 'src.typed'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      );
      expect(rows).toEqual(
        typed.columns.map((c) => ({ attname: c.name, type: c.typeName, notnull: c.isKey })),
      );
      const pk = await db.query(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'src.typed'::regclass`,
      );
      expect(pk.rows).toEqual([{ def: 'PRIMARY KEY (id)' }]);
      const { rows: books } = await db.query<{ relname: string }>(
        "SELECT relname FROM pg_class WHERE relnamespace = '_replicator'::regnamespace AND relkind = 'r' ORDER BY 1",
      );
      expect(books.map((r) => r.relname)).toEqual(['checkpoints', 'deferred_keys', 'snapshot_partitions']);
      expect((await db.query('SELECT * FROM _replicator.deferred_keys')).rows).toEqual([]);
    });

    it('creates a composite primary key in key order, and keeps NOT NULL of other columns', async () => {
      const pair = tableSchema('src', 'pair', [
        ['b', 'text'],
        ['a*', 'text'],
        ['c', 'integer'],
        ['z*', 'integer'],
      ]);
      pair.keyColumns = ['z', 'a'];
      (pair.columns[0] as ColumnSchema).nullable = false;
      const sink = newSink({ target_schema: 'composite' });
      await sink.open([pair]);
      await sink.finishSnapshot(pair);
      const pk = await db.query(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'composite.pair'::regclass`,
      );
      expect(pk.rows).toEqual([{ def: 'PRIMARY KEY (z, a)' }]);
      const { rows } = await db.query(
        `SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'composite.pair'::regclass AND attnum > 0
          ORDER BY attnum`,
      );
      expect(rows.map((r) => `${r.attname}:${r.attnotnull}`)).toEqual([
        'b:true',
        'a:true',
        'c:false',
        'z:true',
      ]);
    });

    it('opens concurrently from several sinks', async () => {
      const schemas = ['c1', 'c2', 'c3', 'c4'];
      await Promise.all(
        schemas.map((s) => newSink({ target_schema: 'conc' }).open([{ ...items, table: s }])),
      );
      await Promise.all(schemas.map((s) => newSink({ target_schema: s }).open([items])));
      for (const s of schemas) expect(await count({ schema: s, table: 'items' })).toBe(0);
    });

    it('maps tables with target_schema and table.<schema>.<table>', async () => {
      const sink = newSink({
        target_schema: 'replica',
        'table.src.items': 'archive.items_copy',
        'table.src.others': 'o',
      });
      await sink.open([items, others, typed]);
      const { rows } = await db.query<{ t: string }>(
        `SELECT to_regclass(t)::text AS t FROM unnest(ARRAY['archive.items_copy', 'replica.o', 'replica.typed']) t`,
      );
      expect(rows.map((r) => r.t)).toEqual(['archive.items_copy', 'replica.o', 'replica.typed']);
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'a', body: null, n: '1.50' })]));
      expect(await readRows({ schema: 'archive', table: 'items_copy' }, items)).toEqual([
        { id: '1', name: 'a', body: null, n: '1.50' },
      ]);
      await expect(
        newSink({ target_schema: 'x' }).open([items, { ...items, schema: 'other' }]),
      ).rejects.toThrow(/src.items and other.items would both be written to x.items/);
    });

    it('checks existing targets', async () => {
      await db.query(`CREATE SCHEMA manual;
        CREATE TABLE manual.items (id integer, name text, body text, n numeric(12,2));
        CREATE TABLE manual.others (k1 text, k2 integer, v text);
        CREATE UNIQUE INDEX ON manual.others (k2, k1);
        CREATE TABLE manual.typed (id bigint PRIMARY KEY)`);
      await expect(newSink({ target_schema: 'manual' }).open([items])).rejects.toThrow(
        /manual.items has no primary key or unique index on exactly the key columns \["id"\]/,
      );
      await expect(newSink({ target_schema: 'manual' }).open([typed])).rejects.toThrow(
        /manual.typed lacks the columns \["amount",/,
      );
      await expect(
        newSink({ target_schema: 'absent', create_tables: 'false' }).open([items]),
      ).rejects.toThrow(/absent.items of src.items does not exist and create_tables is false/);
      expect((await db.query("SELECT to_regnamespace('absent') AS s")).rows[0].s).toBeNull();
      // A unique index (not a primary key) on the key columns, in another order, is a usable arbiter.
      const sink = newSink({ target_schema: 'manual', create_tables: 'false' });
      await sink.open([others]);
      await sink.applyBatch(
        batch([ins(others, { k1: 'a', k2: '1', v: 'x' }), ins(others, { k1: 'a', k2: '1', v: 'y' })]),
      );
      expect(await readRows({ schema: 'manual', table: 'others' }, others)).toEqual([
        { k1: 'a', k2: '1', v: 'y' },
      ]);
    });
    it('casts to the types of a user-made target, and names source types the sink lacks', async () => {
      const moods = tableSchema('src', 'moods', [
        ['id*', 'integer'],
        ['mood', 'src_mood'],
        ['note', 'text'],
      ]);
      await expect(newSink({ target_schema: 'typesx' }).open([moods])).rejects.toThrow(
        /cannot create typesx.moods: the types src_mood of src.moods do not exist in the sink database/,
      );
      await db.query(`CREATE TYPE public.src_mood AS ENUM ('sad', 'happy');
        CREATE SCHEMA IF NOT EXISTS manual;
        CREATE TABLE manual.moods (id bigint PRIMARY KEY, mood text, note varchar(5))`);
      const sink = newSink({ target_schema: 'manual', create_tables: 'false' });
      await sink.open([moods]);
      await sink.applyBatch(batch([ins(moods, { id: '1', mood: 'happy', note: 'hi' })]));
      await sink.writeSnapshotPartition(
        moods,
        { table: moods, partitionId: '0' },
        Readable.from(['2\tsad\tyo\n']),
      );
      expect(await readRows({ schema: 'manual', table: 'moods' }, moods)).toEqual([
        { id: '1', mood: 'happy', note: 'hi' },
        { id: '2', mood: 'sad', note: 'yo' },
      ]);
      // Now that the enum exists, a created target keeps the source type.
      await newSink({ target_schema: 'typesx' }).open([moods]);
      const { rows } = await db.query(
        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'typesx.moods'::regclass AND attname = 'mood'",
      );
      expect(rows).toEqual([{ t: 'src_mood' }]);
    });

    it('works for a user who may write but not create', async () => {
      const creator = newSink({ target_schema: 'limited' });
      await creator.open([items]);
      await creator.finishSnapshot(items);
      await db.query(`DO $$ BEGIN CREATE ROLE sink_writer LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
        GRANT USAGE ON SCHEMA _replicator, limited TO sink_writer;
        GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA _replicator, limited TO sink_writer`);
      const writerUrl = new URL(url);
      writerUrl.username = 'sink_writer';
      const sink = createPostgresSink({
        pipelineId: randomUUID(),
        connection: await pgClientConfigOfDsn(writerUrl.toString()),
        properties: { target_schema: 'limited' },
        state: memorySinkState(),
      });
      sinks.push(sink);
      await sink.open([items]);
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'w', body: null, n: null })]));
      await sink.writeSnapshotPartition(
        items,
        { table: items, partitionId: '0' },
        Readable.from(['2\tx\t\\N\t1\n']),
      );
      expect(await count({ schema: 'limited', table: 'items' })).toBe(2);
      await expect(sink.open([others])).rejects.toThrow(/permission denied for schema limited/);
    });
  });

  describe('snapshot partitions', () => {
    const target = { schema: 'snap', table: 'typed' };
    const partition = (id: string) => ({
      table: { schema: typed.schema, table: typed.table },
      partitionId: id,
    });

    it('copies tricky values exactly, from a stream cut anywhere', async () => {
      const sink = newSink({ target_schema: 'snap' });
      await sink.open([typed]);
      const text = trickyRows.map((r) => copyLine(typed, r)).join('');
      const buffer = Buffer.from(text);
      // Chunks of 997 bytes cut lines, escapes and multi-byte characters in the middle.
      const chunks = Array.from({ length: Math.ceil(buffer.length / 997) }, (_, i) =>
        buffer.subarray(i * 997, (i + 1) * 997),
      );
      expect(await sink.writeSnapshotPartition(typed, partition('0'), Readable.from(chunks))).toBe(3);
      expect(await readRows(target, typed)).toEqual(sortById(trickyRows));
      expect(await sink.snapshotPartitionsDone()).toEqual([partition('0')]);
    });

    it('streams a large partition', async () => {
      const sink = newSink({ target_schema: 'snap' });
      await sink.open([items]);
      async function* lines() {
        for (let i = 0; i < 100_000; i++) yield `${i}\tname ${i}\t\\N\t${i}.25\n`;
      }
      expect(
        await sink.writeSnapshotPartition(
          items,
          { table: items, partitionId: 'big' },
          Readable.from(lines()),
        ),
      ).toBe(100_000);
      expect(await count({ schema: 'snap', table: 'items' })).toBe(100_000);
    });

    it('leaves neither rows nor marker when the stream or the data fails', async () => {
      const sink = newSink({ target_schema: 'broken' });
      await sink.open([items]);
      const ref = { schema: 'broken', table: 'items' };
      async function* failing() {
        for (let i = 0; i < 5000; i++) yield `${i}\tx\t\\N\t1\n`;
        throw new Error('source connection lost');
      }
      const p = (id: string) => ({ table: items, partitionId: id });
      await expect(sink.writeSnapshotPartition(items, p('1'), Readable.from(failing()))).rejects.toThrow(
        'source connection lost',
      );
      await expect(
        sink.writeSnapshotPartition(items, p('2'), Readable.from(['1\ta\t\\N\t1\n', 'two\tb\t\\N\t1\n'])),
      ).rejects.toThrow(/invalid input syntax for type integer/);
      const early = new Readable({ read() {} });
      // The caller owns the stream, as the runtime does: it hears its errors until the write settles.
      early.on('error', () => {});
      early.destroy(new Error('failed before the first byte'));
      await expect(sink.writeSnapshotPartition(items, p('3'), early)).rejects.toThrow(
        'failed before the first byte',
      );
      expect(await count(ref)).toBe(0);
      expect(await sink.snapshotPartitionsDone()).toEqual([]);
      // The sink is still usable afterwards.
      expect(await sink.writeSnapshotPartition(items, p('4'), Readable.from(['7\ta\t\\N\t1\n']))).toBe(1);
      expect(await sink.snapshotPartitionsDone()).toEqual([
        { table: { schema: 'src', table: 'items' }, partitionId: '4' },
      ]);
    });
    it('leaves neither rows nor marker when a binary stream fails mid-copy, and writes the next', async () => {
      const pairs = tableSchema('src', 'pairs', [
        ['id*', 'bigint'],
        ['note', 'text'],
      ]);
      pairs.columns.forEach((c, i) => {
        c.typeOid = [20, 25][i] as number;
      });
      const sink = newSink({ target_schema: 'binfail' });
      await sink.open([pairs]);
      expect(sink.snapshotCopyFormat?.(pairs)).toBe('binary');
      const tuples = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) => [int64(BigInt(from + i)), Buffer.from(`note ${from + i}`)]);
      async function* failing() {
        yield* messageChunks(binaryCopyMessages(tuples(0, 5000), { trailer: false }), 100);
        throw new Error('source connection lost');
      }
      const p = (id: string) => ({ table: pairs, partitionId: id });
      await expect(
        sink.writeSnapshotPartition(pairs, p('1'), Readable.from(failing()), 'binary'),
      ).rejects.toThrow('source connection lost');
      expect(await count({ schema: 'binfail', table: 'pairs' })).toBe(0);
      expect(await sink.snapshotPartitionsDone()).toEqual([]);
      // Every piece sent was whole messages, so the copy ended cleanly and the session is reused.
      const whole = Readable.from(messageChunks(binaryCopyMessages(tuples(10, 300)), 7));
      expect(await sink.writeSnapshotPartition(pairs, p('2'), whole, 'binary')).toBe(300);
      expect(await count({ schema: 'binfail', table: 'pairs' })).toBe(300);
    });

    it('copies in binary into columns of the source types, and names the key of a row it refuses', async () => {
      const columns: [string, string, number][] = [
        ['id*', 'bigint', 20],
        ['note', 'text', 25],
        ['at', 'timestamp with time zone', 1184],
        ['amount', 'numeric(12,2)', 1700],
        ['span', 'interval', 1186],
      ];
      const schema = tableSchema(
        'bin_src',
        'rows',
        columns.map(([name, type]) => [name, type]),
      );
      schema.columns.forEach((c, i) => {
        c.typeOid = (columns[i] as [string, string, number])[2];
      });
      await db.query(`CREATE SCHEMA bin_src;
        CREATE TABLE bin_src.rows (id bigint PRIMARY KEY, note text, at timestamptz, amount numeric(12,2), span interval);
        INSERT INTO bin_src.rows SELECT i, CASE WHEN i = 40123 THEN 'bad' WHEN i % 7 = 0 THEN NULL ELSE 'n' || i || E'\t\n' END,
          '2024-02-29 23:59:59.123456+00'::timestamptz + i * interval '1 second', i / 100.0, i * interval '1 microsecond'
          FROM generate_series(-5, 60000) i`);
      // A session per copy, as each copy worker has: one whose copy the sink refused is ended.
      const binary = async (where: string) => {
        const source = new pg.Client({ connectionString: url, application_name: 'binary_copy_source' });
        source.on('error', () => {});
        await source.connect();
        const copy = source.query(
          new CopyOutStream(
            `COPY (SELECT id, note, at, amount, span FROM bin_src.rows WHERE ${where}) TO STDOUT (FORMAT binary)`,
            'binary',
          ),
        );
        copy.on('error', () => {});
        return copy;
      };
      try {
        const pipelineId = randomUUID();
        const sink = newSink({ target_schema: 'bin' }, pipelineId);
        await sink.open([schema]);
        expect(sink.snapshotCopyFormat?.(schema)).toBe('binary');
        const p = (id: string) => ({ table: schema, partitionId: id });
        expect(await sink.writeSnapshotPartition(schema, p('0'), await binary('id < 30000'), 'binary')).toBe(
          30_005,
        );
        await db.query("ALTER TABLE bin.rows ADD CONSTRAINT not_bad CHECK (note <> 'bad')");
        await expect(
          sink.writeSnapshotPartition(schema, p('1'), await binary('id >= 30000'), 'binary'),
        ).rejects.toThrow(
          /the sink refused the change of bin_src\.rows with key \(id\)=\(40123\): .*not_bad/,
        );
        await db.query("UPDATE bin_src.rows SET note = 'good' WHERE id = 40123");
        expect(await sink.writeSnapshotPartition(schema, p('1'), await binary('id >= 30000'), 'binary')).toBe(
          30_001,
        );
        const differ = await db.query(
          '(TABLE bin_src.rows EXCEPT TABLE bin.rows) UNION ALL (TABLE bin.rows EXCEPT TABLE bin_src.rows)',
        );
        expect(differ.rows).toEqual([]);
        // A target column of another type than the source's takes text.
        await db.query('ALTER TABLE bin.rows ALTER COLUMN note TYPE varchar(100)');
        const reopened = newSink({ target_schema: 'bin' }, pipelineId);
        await reopened.open([schema]);
        expect(reopened.snapshotCopyFormat?.(schema)).toBe('text');
      } finally {
        await db.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'binary_copy_source'",
        );
      }
    });
  });

  describe('applyBatch', () => {
    it('round-trips every type', async () => {
      const sink = newSink({ target_schema: 'applied' });
      await sink.open([typed]);
      await sink.applyBatch(batch(trickyRows.map((r) => ins(typed, r))));
      const target = { schema: 'applied', table: 'typed' };
      expect(await readRows(target, typed)).toEqual(sortById(trickyRows));
      const [first, second, third] = trickyRows as [Row, Row, Row];
      // Swap the images of two rows by update, and delete the third.
      await sink.applyBatch(
        batch([
          upd(typed, { ...second, id: first.id as string }),
          upd(typed, { ...first, id: second.id as string }),
          del(typed, { id: third.id as string }),
        ]),
      );
      expect(await readRows(target, typed)).toEqual(
        sortById([
          { ...second, id: first.id as string },
          { ...first, id: second.id as string },
        ]),
      );
    });

    it('writes a large batch of inserts by COPY, every type intact, and falls back to the upsert when a key is there (a replay)', async () => {
      const sink = newSink({ target_schema: 'copied' });
      await sink.open([typed]);
      const target = { schema: 'copied', table: 'typed' };
      // Enough rows for a COPY, each type's tricky values among them (tabs, newlines, backslashes, nulls).
      const many = (from: number, count: number, tag: string) =>
        Array.from({ length: count }, (_, i) => {
          const model = trickyRows[i % trickyRows.length] as Row;
          return { ...model, id: String(from + i), body: `${tag}\t${i}\n\\` };
        });
      const first = many(1, MIN_ROWS_FOR_COPY + 100, 'first');
      await sink.applyBatch(batch(first.map((r) => ins(typed, r))));
      expect(await readRows(target, typed)).toEqual(first);
      // Half of these keys exist: the COPY is refused whole, and the upsert writes every row.
      const replay = many(301, MIN_ROWS_FOR_COPY + 100, 'again');
      await sink.applyBatch(batch(replay.map((r) => ins(typed, r))));
      const expected = [...first.slice(0, 300), ...replay];
      expect(await readRows(target, typed)).toEqual(expected);
      expect(await sink.readCheckpoint()).toMatchObject({ epoch: 1 });
    });

    it('writes the rows a batch inserts beside the rows it updates by COPY, and the same batch again (a replay) by upsert', async () => {
      const sink = newSink({ target_schema: 'mixed_copy' });
      await sink.open([items]);
      const target = { schema: 'mixed_copy', table: 'items' };
      const existing = Array.from({ length: 10 }, (_, i) => ({
        id: String(i + 1),
        name: 'v0',
        body: null,
        n: null,
      }));
      await sink.applyBatch(
        batch(
          existing.map((r) => ins(items, r)),
          1,
          0x100n,
        ),
      );
      // Each transaction updates one of ten shared rows and inserts a new one.
      const changes = Array.from({ length: MIN_ROWS_FOR_COPY + 100 }, (_, i) => [
        upd(items, { id: String((i % 10) + 1), name: `v${i + 1}`, body: null, n: null }),
        ins(items, { id: String(1000 + i), name: 'new', body: `b${i}`, n: null }),
      ]).flat();
      const last = MIN_ROWS_FOR_COPY + 100;
      const expected = [
        ...existing.map((r, k) => ({ ...r, name: `v${last - ((last - 1 - k) % 10)}` })),
        ...Array.from({ length: last }, (_, i) => ({
          id: String(1000 + i),
          name: 'new',
          body: `b${i}`,
          n: null,
        })),
      ];
      await sink.applyBatch(batch(changes, 1, 0x200n));
      expect(await readRows(target, items)).toEqual(expected);
      // Applied again after a crash: every new key is there, the COPY is refused whole and upserted.
      await sink.applyBatch(batch(changes, 2, 0x200n));
      expect(await readRows(target, items)).toEqual(expected);
      expect(await sink.readCheckpoint()).toEqual({ lsn: 0x200n, epoch: 2 });
    });

    it('fails a batch whose COPY the target refuses for another cause than a key, and goes on writing the next by COPY', async () => {
      const sink = newSink({ target_schema: 'copy_refused' });
      await sink.open([items]);
      // The target refuses one row: the batch fails on it, not on a key already there.
      await db.query(`ALTER TABLE copy_refused.items ADD CONSTRAINT no_bad CHECK (name <> 'bad')`);
      // Which statement wrote each row: a refused COPY must not turn the table to upserts.
      await db.query(`
        CREATE TABLE copy_refused.writes (id integer, query text);
        CREATE FUNCTION copy_refused.note_write() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN INSERT INTO copy_refused.writes VALUES (NEW.id, current_query()); RETURN NEW; END $$;
        CREATE TRIGGER note_write BEFORE INSERT ON copy_refused.items
          FOR EACH ROW EXECUTE FUNCTION copy_refused.note_write()`);
      const rows = (from: number, name: (id: number) => string) =>
        Array.from({ length: MIN_ROWS_FOR_COPY + 10 }, (_, i) => ({
          id: String(from + i),
          name: name(from + i),
          body: null,
          n: null,
        }));
      const refused = rows(1, (id) => (id === 7 ? 'bad' : 'ok'));
      await expect(sink.applyBatch(batch(refused.map((r) => ins(items, r))))).rejects.toThrow(/no_bad/);
      expect(await count({ schema: 'copy_refused', table: 'items' })).toBe(0);

      const next = rows(1_000, () => 'ok');
      await sink.applyBatch(batch(next.map((r) => ins(items, r))));
      expect(await count({ schema: 'copy_refused', table: 'items' })).toBe(next.length);
      const { rows: writes } = await db.query<{ statement: string; n: string }>(
        `SELECT split_part(ltrim(query), ' ', 1) AS statement, count(*) AS n FROM copy_refused.writes GROUP BY 1`,
      );
      expect(writes).toEqual([{ statement: 'COPY', n: String(next.length) }]);
    });

    it('ends a batch exactly where the same changes applied one by one end (property)', async () => {
      const step = fc.record({
        kind: fc.constantFrom('insert', 'update', 'partial', 'move', 'move-partial', 'delete'),
        id: fc.integer({ min: 1, max: 6 }),
        to: fc.integer({ min: 1, max: 6 }),
        value: fc.string({ maxLength: 4 }),
      });
      let round = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
          round++;
          const one = { schema: `folded_one_${round}`, table: 'items' };
          const many = { schema: `folded_many_${round}`, table: 'items' };
          // Turn the steps into a change sequence a source could send: rows exist only where the model says.
          const rows = new Map<string, Row>();
          const changes: ChangeEvent[] = [];
          for (const { kind, id, to, value } of steps) {
            const key = String(id);
            const row = rows.get(key);
            if (!row) {
              const fresh = { id: key, name: value, body: `body ${value}`, n: '1.00' };
              rows.set(key, fresh);
              changes.push(ins(items, fresh));
            } else if (kind === 'delete') {
              rows.delete(key);
              changes.push(del(items, { id: key }));
            } else if (kind === 'partial') {
              const after = { id: key, name: value, n: row.n ?? null };
              rows.set(key, { ...row, ...after });
              changes.push(upd(items, after, { unchangedToast: ['body'] }));
            } else if (kind === 'move-partial' && !rows.has(String(to))) {
              // A new key without the TOAST column: the row keeps its stored body, moved in place.
              const after = { id: String(to), name: value, n: row.n ?? null };
              rows.delete(key);
              rows.set(String(to), { ...row, ...after });
              changes.push(upd(items, after, { key: { id: key }, unchangedToast: ['body'] }));
            } else if (kind === 'move' && !rows.has(String(to))) {
              const after = { ...row, id: String(to), name: value };
              rows.delete(key);
              rows.set(String(to), after);
              changes.push(upd(items, after, { key: { id: key } }));
            } else {
              const after = { ...row, name: value, n: `${value.length}.00` };
              rows.set(key, after);
              changes.push(upd(items, after));
            }
          }
          const a = newSink({ target_schema: one.schema });
          const b = newSink({ target_schema: many.schema });
          await Promise.all([a.open([items]), b.open([items])]);
          await a.applyBatch(batch(changes));
          for (const change of changes) await b.applyBatch(batch([change]));
          const expected = sortById([...rows.values()]);
          expect(await readRows(one, items)).toEqual(expected);
          expect(await readRows(many, items)).toEqual(expected);
        }),
        { numRuns: 25 },
      );
    });

    it('handles every ordering and replay trap', async () => {
      const sink = newSink({ target_schema: 'traps' });
      await sink.open([items, others]);
      const big = bigText(30_000, 7);
      const seed = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => ({
        id: String(i),
        name: `name-${i}`,
        body: i === 5 ? big : `body-${i}`,
        n: `${i}.00`,
      }));
      await sink.applyBatch(batch(seed.map((r) => ins(items, r))));
      await sink.applyBatch(
        batch([
          // Replay of an insert already applied: an upsert.
          ins(items, { id: '1', name: 'one-replayed', body: 'b1', n: '1.10' }),
          // One key three times in one group: only the last image.
          ins(items, { id: '20', name: 'a', body: null, n: null }),
          upd(items, { id: '20', name: 'b', body: null, n: null }),
          upd(items, { id: '20', name: 'c', body: 'c', n: '20.00' }),
          // Unchanged TOAST columns are kept; twice for one key in one group.
          upd(items, { id: '2', name: 'two-new', n: '2.50' }, { unchangedToast: ['body'] }),
          upd(items, { id: '5', name: 'five-1', n: '5.10' }, { unchangedToast: ['body'] }),
          upd(items, { id: '5', name: 'five-2', n: '5.20' }, { unchangedToast: ['body'] }),
          // An update of a missing row is not turned into an insert when columns are missing...
          upd(items, { id: '30', name: 'ghost', n: '0.00' }, { unchangedToast: ['body'] }),
          // ...but is when the image is complete.
          upd(items, { id: '31', name: 'whole', body: 'w', n: '31.00' }),
          // Key changes: complete image, image with TOAST missing, and a chain.
          upd(items, { id: '33', name: 'moved', body: 'm', n: '33.00' }, { key: { id: '3' } }),
          upd(
            items,
            { id: '44', name: 'moved-toast', n: '44.00' },
            { key: { id: '4' }, unchangedToast: ['body'] },
          ),
          upd(items, { id: '66', name: 'hop1', body: 'h', n: '66.00' }, { key: { id: '6' } }),
          upd(items, { id: '666', name: 'hop2', body: 'h', n: '666.00' }, { key: { id: '66' } }),
          // Another table in between.
          ins(others, { k1: 'x', k2: '1', v: 'v1' }),
          // Delete of a key inserted earlier in the same batch, and re-insert after delete.
          ins(items, { id: '40', name: 'short-lived', body: null, n: null }),
          del(items, { id: '40' }),
          del(items, { id: '7' }),
          ins(items, { id: '50', name: 'first', body: null, n: null }),
          del(items, { id: '50' }),
          ins(items, { id: '50', name: 'again', body: null, n: null }),
          // A partial update followed by a complete one of the same row.
          upd(items, { id: '8', n: '8.80' }, { unchangedToast: ['name', 'body'] }),
          upd(items, { id: '8', name: 'eight', body: 'b8', n: '8.88' }),
          del(others, { k1: 'x', k2: '1' }),
          ins(others, { k1: 'x', k2: '1', v: 'v2' }),
        ]),
      );
      expect(await readRows({ schema: 'traps', table: 'items' }, items)).toEqual([
        { id: '1', name: 'one-replayed', body: 'b1', n: '1.10' },
        { id: '2', name: 'two-new', body: 'body-2', n: '2.50' },
        { id: '5', name: 'five-2', body: big, n: '5.20' },
        { id: '8', name: 'eight', body: 'b8', n: '8.88' },
        { id: '20', name: 'c', body: 'c', n: '20.00' },
        { id: '31', name: 'whole', body: 'w', n: '31.00' },
        { id: '33', name: 'moved', body: 'm', n: '33.00' },
        { id: '44', name: 'moved-toast', body: 'body-4', n: '44.00' },
        { id: '50', name: 'again', body: null, n: null },
        { id: '666', name: 'hop2', body: 'h', n: '666.00' },
      ]);
      expect(await readRows({ schema: 'traps', table: 'others' }, others)).toEqual([
        { k1: 'x', k2: '1', v: 'v2' },
      ]);
    });

    it('rolls back the whole batch when one change fails', async () => {
      const pipelineId = randomUUID();
      const sink = newSink({ target_schema: 'atomic' }, pipelineId);
      await sink.open([items]);
      const bad = batch([
        ins(items, { id: '1', name: 'a', body: null, n: null }),
        ins(items, { id: 'x', name: 'b', body: null, n: null }),
      ]);
      await expect(sink.applyBatch(bad)).rejects.toThrow(/invalid input syntax for type integer/);
      expect(await count({ schema: 'atomic', table: 'items' })).toBe(0);
      expect(await sink.readCheckpoint()).toBeNull();
      await expect(
        sink.applyBatch(batch([ins({ ...items, table: 'unknown' }, { id: '1' })])),
      ).rejects.toThrow(/src.unknown was not opened/);
    });

    it('fails a batch whose COMMIT the target refuses (a deferred constraint), storing nothing, and writes the next', async () => {
      const sink = newSink({ target_schema: 'deferred' });
      await sink.open([items]);
      await db.query('CREATE TABLE deferred.parents (id numeric(12,2) PRIMARY KEY)');
      await db.query(
        'ALTER TABLE deferred.items ADD CONSTRAINT items_parent FOREIGN KEY (n) REFERENCES deferred.parents (id) DEFERRABLE INITIALLY DEFERRED',
      );
      const orphan = batch([ins(items, { id: '1', name: 'a', body: null, n: '7' })], 1, 0x100n);
      await expect(sink.applyBatch(orphan)).rejects.toMatchObject({ code: '23503' });
      expect(await count({ schema: 'deferred', table: 'items' })).toBe(0);
      expect(await sink.readCheckpoint()).toBeNull();
      await sink.applyBatch(batch([ins(items, { id: '2', name: 'b', body: null, n: null })], 1, 0x200n));
      expect(await count({ schema: 'deferred', table: 'items' })).toBe(1);
      expect(await sink.readCheckpoint()).toEqual({ lsn: 0x200n, epoch: 1 });
    });

    it('commits a held transaction with its checkpoint, and fences one whose pipeline a newer worker took meanwhile', async () => {
      const [older, newer] = await twoWorkers('held_fence');
      // A batch builds the key the pipeline's snapshot would have: a held transaction needs it.
      await older.applyBatch(batch([ins(items, { id: '0', name: 'first', body: null, n: null })], 1, 0x80n));
      const kept = await (older.openHeldTransaction as NonNullable<Sink['openHeldTransaction']>)();
      await kept.apply([ins(items, { id: '1', name: 'kept', body: null, n: null })]);
      await kept.commit(batch([], 1, 0x100n));
      expect(await older.readCheckpoint()).toEqual({ lsn: 0x100n, epoch: 1 });
      const fenced = await (older.openHeldTransaction as NonNullable<Sink['openHeldTransaction']>)();
      await fenced.apply([ins(items, { id: '2', name: 'lost', body: null, n: null })]);
      await newer.applyBatch(batch([], 2, 0x200n));
      await expect(fenced.commit(batch([], 1, 0x300n))).rejects.toMatchObject({
        name: 'FencedError',
        storedEpoch: 2,
        writerEpoch: 1,
      });
      expect((await readRows({ schema: 'held_fence', table: 'items' }, items)).map((r) => r.name)).toEqual([
        'first',
        'kept',
      ]);
      expect(await newer.readCheckpoint()).toEqual({ lsn: 0x200n, epoch: 2 });
    });

    it('stores the checkpoint of an empty batch, and a position in its canonical form, readable before open', async () => {
      const pipelineId = randomUUID();
      const sink = newSink({ target_schema: 'ckpt' }, pipelineId);
      expect(await sink.readCheckpoint()).toBeNull();
      await sink.open([items]);
      expect(await sink.readCheckpoint()).toBeNull();
      await sink.applyBatch(batch([], 1, 0x16b3748n));
      expect(await sink.readCheckpoint()).toEqual({ lsn: 0x16b3748n, epoch: 1 });
      await sink.applyBatch(
        batch([ins(items, { id: '1', name: null, body: null, n: null })], 1, 0xa000000ffn),
      );
      expect(await newSink({}, pipelineId).readCheckpoint()).toEqual({ lsn: 0xa000000ffn, epoch: 1 });
    });

    it('fences a writer that waited for a newer one to commit', async () => {
      const pipelineId = randomUUID();
      const older = newSink({ target_schema: 'fence_wait' }, pipelineId);
      await older.open([items]);
      await older.applyBatch(batch([], 4, 0x500n));
      const newer = new pg.Client({ connectionString: url });
      await newer.connect();
      try {
        await newer.query('BEGIN');
        await newer.query('UPDATE _replicator.checkpoints SET epoch = 5 WHERE pipeline_id = $1', [
          pipelineId,
        ]);
        const waiting = older.applyBatch(
          batch([ins(items, { id: '9', name: null, body: null, n: null })], 4),
        );
        waiting.catch(() => {});
        // Once the older writer waits for the newer one's lock on the checkpoint.
        await vi.waitFor(
          async () => {
            const { rows } = await db.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            );
            expect(rows[0].n).toBeGreaterThan(0);
          },
          { timeout: 30_000, interval: 20 },
        );
        await newer.query('COMMIT');
        await expect(waiting).rejects.toMatchObject({ name: 'FencedError', storedEpoch: 5, writerEpoch: 4 });
      } finally {
        await newer.end();
      }
      expect(await count({ schema: 'fence_wait', table: 'items' })).toBe(0);
    });

    it('refuses a batch its checkpoint already holds: the last batch of a worker that lost the pipeline committed after the new owner read the checkpoint', async () => {
      const [stale, owner] = await twoWorkers('ahead');
      await stale.applyBatch(batch([ins(items, { id: '1', name: 'v0', body: null, n: null })], 1, 0x100n));
      // The new owner read 0/100 and streams from there; the old one's batch up to 0/300 commits first.
      const from200 = { commitLsn: 0x200n, xid: 2, commitTime: '' };
      const from300 = { commitLsn: 0x300n, xid: 3, commitTime: '' };
      await stale.applyBatch(
        batch(
          [
            { ...upd(items, { id: '1', name: 'v1', body: null, n: null }), ...from200 },
            { ...upd(items, { id: '1', name: 'v2', body: null, n: null }), ...from300 },
          ],
          1,
          0x380n,
        ),
      );
      const behind = owner.applyBatch(
        batch([{ ...upd(items, { id: '1', name: 'v1', body: null, n: null }), ...from200 }], 2, 0x280n),
      );
      await expect(behind).rejects.toMatchObject({ name: 'CheckpointAheadError', stored: 0x380n });
      expect((await readRows({ schema: 'ahead', table: 'items' }, items))[0]?.name).toBe('v2');
      expect(await owner.readCheckpoint()).toEqual({ lsn: 0x380n, epoch: 1 });
      // Started again from the checkpoint, its next batch goes in and fences the old owner.
      const from400 = { commitLsn: 0x400n, xid: 4, commitTime: '' };
      await owner.applyBatch(
        batch([{ ...upd(items, { id: '1', name: 'v3', body: null, n: null }), ...from400 }], 2, 0x480n),
      );
      expect(await owner.readCheckpoint()).toEqual({ lsn: 0x480n, epoch: 2 });
    });

    it('applies repeated 10000-row upsert batches', async () => {
      const sink = newSink({ target_schema: 'perf' });
      await sink.open([items]);
      const rounds = 5;
      for (let round = 0; round < rounds; round++) {
        const changes = Array.from({ length: 10_000 }, (_, i) =>
          (round === 0 ? ins : upd)(items, {
            id: String(i),
            name: `n${round}-${i}`,
            body: 'x'.repeat(100),
            n: `${i}.5`,
          }),
        );
        await sink.applyBatch(batch(changes));
      }
      expect(await count({ schema: 'perf', table: 'items' })).toBe(10_000);
      expect(await sink.readCheckpoint()).not.toBeNull();
    });
  });

  it('writes tables and columns with hostile names exactly', async () => {
    await db.query(
      'CREATE TABLE IF NOT EXISTS public.x (id int); CREATE TABLE IF NOT EXISTS public.victim (id int)',
    );
    const hostile = tableSchema('we ird"s', 't"; DROP TABLE victim;--', [
      ['a"; DROP TABLE x;--*', 'integer'],
      ['Mixed Case', 'text'],
      ['new\nline\\', 'text'],
    ]);
    const sink = newSink();
    await sink.open([hostile]);
    const target = { schema: hostile.schema, table: hostile.table };
    const { rows } = await db.query<{ attname: string }>(
      'SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 ORDER BY attnum',
      [qualified(target)],
    );
    expect(rows.map((r) => r.attname)).toEqual(hostile.columns.map((c) => c.name));
    const row = (id: string, v: string): Row => ({
      'a"; DROP TABLE x;--': id,
      'Mixed Case': v,
      'new\nline\\': v,
    });
    const copy = Readable.from([copyLine(hostile, row('1', 'a')), copyLine(hostile, row('2', 'b'))]);
    expect(await sink.writeSnapshotPartition(hostile, { table: target, partitionId: '0' }, copy)).toBe(2);
    await sink.applyBatch(
      batch([
        ins(hostile, row('3', 'c')),
        upd(hostile, row('1', 'a2')),
        upd(hostile, { 'a"; DROP TABLE x;--': '2', 'Mixed Case': 'b2' }, { unchangedToast: ['new\nline\\'] }),
        del(hostile, { 'a"; DROP TABLE x;--': '3' }),
      ]),
    );
    expect(await readRows(target, hostile)).toEqual([
      row('1', 'a2'),
      { ...row('2', 'b'), 'Mixed Case': 'b2' },
    ]);
    expect(await sink.snapshotPartitionsDone()).toEqual([{ table: target, partitionId: '0' }]);
    const survivors = await db.query(
      "SELECT to_regclass('public.x') AS x, to_regclass('public.victim') AS v",
    );
    expect(survivors.rows[0]).toEqual({ x: 'x', v: 'victim' });
  });
});
