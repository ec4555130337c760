import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChangeEvent, ColumnSchema, Row, TableRef, TableSchema } from '../../src/core/change.js';
import { diffSchemas } from '../../src/core/schema-diff.js';
import type { ChangeBatch, Sink } from '../../src/core/sink.js';
import { AppError } from '../../src/errors/app-error.js';
import { mysqlConnectionOptions } from '../../src/sinks/mysql/mysql-connection-type.js';
import { parseMysqlDsn } from '../../src/sinks/mysql/mysql-dsn.js';
import { createMysqlSink } from '../../src/sinks/mysql/mysql-sink.js';
import { preflightMysqlSink } from '../../src/sinks/mysql/preflight.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { memorySinkState } from '../support/memory-sink-state.js';

/** Builds a source table schema; `*` after a column name marks a key column. */
function tableSchema(schema: string, table: string, columns: [string, string][]): TableSchema {
  const cols: ColumnSchema[] = columns.map(([spec, typeName]) => {
    const isKey = spec.endsWith('*');
    return { name: isKey ? spec.slice(0, -1) : spec, typeName, typeOid: 0, nullable: !isKey, isKey };
  });
  return { schema, table, columns: cols, keyColumns: cols.filter((c) => c.isKey).map((c) => c.name) };
}

const copyField = (v: string | null) =>
  v === null
    ? '\\N'
    : v.replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
const copyLine = (table: TableSchema, row: Row) =>
  `${table.columns.map((c) => copyField(row[c.name] ?? null)).join('\t')}\n`;

const typed = tableSchema('src', 'typed', [
  ['id*', 'bigint'],
  ['small', 'smallint'],
  ['amount', 'numeric(12,2)'],
  ['exact', 'numeric'],
  ['ratio', 'double precision'],
  ['at', 'timestamp with time zone'],
  ['local_at', 'timestamp(3) without time zone'],
  ['day', 'date'],
  ['clock', 'time without time zone'],
  ['doc', 'jsonb'],
  ['blob', 'bytea'],
  ['ints', 'integer[]'],
  ['code', 'character varying(20)'],
  ['flag', 'boolean'],
  ['uid', 'uuid'],
  ['span', 'interval'],
  ['body', 'text'],
]);

/** Rows in the source's canonical text, and what MySQL must hold for each (as mysql2 reads it back). */
const trickyRows: { source: Row; stored: Record<string, unknown> }[] = [
  {
    source: {
      id: '1',
      small: '-32768',
      amount: '12345.67',
      exact: '123456789012345678901234567890.000000000000000000001',
      ratio: '0.30000000000000004',
      at: '2024-03-01 01:30:00.123456+05:30',
      local_at: '2024-01-02 03:04:05.678',
      day: '2024-02-29',
      clock: '23:59:59.999999',
      doc: '{"a": [1, 2.50, "x\\ty"], "é": null}',
      blob: '\\x00ff5c0a09',
      ints: '{1,2,NULL,-3}',
      code: 'tab\there',
      flag: 't',
      uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      span: '1 year 2 mons 3 days 04:05:06.789',
      body: "line1\nline2\r\n\ttab \\ backslash ' quote \\N not null 𝄞 中文",
    },
    stored: {
      id: '1',
      small: -32768,
      amount: '12345.67',
      exact: '123456789012345678901234567890.000000000000000000001',
      ratio: 0.30000000000000004,
      at: '2024-02-29 20:00:00.123456',
      local_at: '2024-01-02 03:04:05.678',
      day: '2024-02-29',
      clock: '23:59:59.999999',
      doc: { a: [1, 2.5, 'x\ty'], é: null },
      blob: Buffer.from([0, 255, 0x5c, 0x0a, 0x09]),
      ints: '{1,2,NULL,-3}',
      code: 'tab\there',
      flag: 1,
      uid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      span: '1 year 2 mons 3 days 04:05:06.789',
      body: "line1\nline2\r\n\ttab \\ backslash ' quote \\N not null 𝄞 中文",
    },
  },
  {
    source: {
      id: '-9223372036854775808',
      small: '0',
      amount: '-0.10',
      exact: 'NaN',
      ratio: '1e+300',
      at: '1999-12-31 23:00:00-01',
      local_at: '1970-01-01 00:00:00',
      day: '0001-01-01',
      clock: '00:00:00',
      doc: '[]',
      blob: '\\x',
      ints: '{}',
      code: '',
      flag: 'f',
      uid: '00000000-0000-0000-0000-000000000000',
      span: '-00:00:00.000001',
      body: '',
    },
    stored: {
      id: '-9223372036854775808',
      small: 0,
      amount: '-0.10',
      exact: 'NaN',
      ratio: 1e300,
      at: '2000-01-01 00:00:00.000000',
      local_at: '1970-01-01 00:00:00.000',
      day: '0001-01-01',
      clock: '00:00:00.000000',
      doc: [],
      blob: Buffer.alloc(0),
      ints: '{}',
      code: '',
      flag: 0,
      uid: '00000000-0000-0000-0000-000000000000',
      span: '-00:00:00.000001',
      body: '',
    },
  },
  {
    source: {
      id: '9223372036854775807',
      ...Object.fromEntries(typed.columns.slice(1).map((c) => [c.name, null])),
    },
    stored: {
      id: '9223372036854775807',
      ...Object.fromEntries(typed.columns.slice(1).map((c) => [c.name, null])),
    },
  },
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
const meta = () => ({ commitLsn: 0x1n, xid: 1, commitTime: '' });
const ins = (table: TableSchema, after: Row): ChangeEvent => ({ ...meta(), op: 'insert', table, after });
const upd = (table: TableSchema, after: Row, extra: Partial<ChangeEvent> = {}): ChangeEvent => ({
  ...meta(),
  op: 'update',
  table,
  after,
  ...extra,
});
const del = (table: TableSchema, key: Row): ChangeEvent => ({ ...meta(), op: 'delete', table, key });
const trunc = (...tables: TableSchema[]): ChangeEvent => ({
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

const ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

describe('mysql sink', () => {
  const database = `sink_${randomBytes(6).toString('hex')}`;
  let admin: Connection;
  const sinks: Sink[] = [];

  beforeAll(async () => {
    admin = await mysql.createConnection({
      ...ADMIN,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    await admin.query(`CREATE DATABASE \`${database}\``);
    await admin.query(`USE \`${database}\``);
    await admin.query("SET time_zone = '+00:00'");
  });
  afterAll(async () => {
    await Promise.all(sinks.map((s) => s.close()));
    await admin?.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin?.query(`DROP DATABASE IF EXISTS \`${database}_other\``);
    await admin?.end();
  });

  function newSink(properties: Record<string, string> = {}, pipelineId: string = randomUUID()): Sink {
    const dsn = parseMysqlDsn(`mysql://root@127.0.0.1:3306/${database}`);
    const sink = createMysqlSink({
      pipelineId,
      connection: mysqlConnectionOptions(dsn, { tls: {} }),
      properties,
      state: memorySinkState(),
    });
    sinks.push(sink);
    return sink;
  }

  async function select<T = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> {
    const [rows] = await admin.query<RowDataPacket[]>(sql, values);
    return rows as unknown as T[];
  }

  /** Every row of a target, ordered by the key; JSON parsed, as MySQL may print it in its own form. */
  async function readRows(table: string, source: TableSchema): Promise<Record<string, unknown>[]> {
    const order = source.keyColumns.map((k) => `\`${k}\``).join(', ');
    const rows = await select(`SELECT * FROM \`${database}\`.\`${table}\` ORDER BY ${order}`);
    const json = new Set(source.columns.filter((c) => /^jsonb?$/.test(c.typeName)).map((c) => c.name));
    return rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k, json.has(k) && typeof v === 'string' ? JSON.parse(v) : v]),
      ),
    );
  }

  const count = async (table: string) =>
    Number((await select<{ n: number }>(`SELECT COUNT(*) AS n FROM \`${database}\`.\`${table}\``))[0]?.n);

  describe('open', () => {
    it('creates the bookkeeping and the targets with the documented types, key and NOT NULL', async () => {
      const sink = newSink();
      await sink.open([typed, items]);
      await sink.open([typed, items]);
      const columns = await select<{ name: string; type: string; nullable: string; key: string }>(
        `SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_KEY AS \`key\`
           FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'typed' ORDER BY ORDINAL_POSITION`,
        [database],
      );
      const types = Object.fromEntries(columns.map((c) => [c.name, c.type.toUpperCase()]));
      expect(types).toMatchObject({
        id: 'BIGINT(20)',
        small: 'SMALLINT(6)',
        amount: 'DECIMAL(12,2)',
        exact: 'LONGTEXT',
        ratio: 'DOUBLE',
        at: 'DATETIME(6)',
        local_at: 'DATETIME(3)',
        day: 'DATE',
        clock: 'TIME(6)',
        blob: 'LONGBLOB',
        ints: 'LONGTEXT',
        code: 'VARCHAR(20)',
        flag: 'TINYINT(1)',
        uid: 'CHAR(36)',
        span: 'LONGTEXT',
        body: 'LONGTEXT',
      });
      // MariaDB's JSON is LONGTEXT with a JSON_VALID check; MySQL's is JSON.
      expect(['JSON', 'LONGTEXT']).toContain(types.doc);
      expect(columns.filter((c) => c.key === 'PRI').map((c) => c.name)).toEqual(['id']);
      expect(columns.filter((c) => c.nullable === 'NO').map((c) => c.name)).toEqual(['id']);
      const tables = await select<{ name: string }>(
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '\\_replicator%' ORDER BY 1",
        [database],
      );
      expect(tables.map((t) => t.name)).toEqual([
        '_replicator_checkpoints',
        '_replicator_snapshot_partitions',
      ]);
    });

    it('gives a text key a bounded length and keeps keys apart byte for byte', async () => {
      const sink = newSink();
      await sink.open([others]);
      const [k1] = await select<{ type: string }>(
        "SELECT COLUMN_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'others' AND COLUMN_NAME = 'k1'",
        [database],
      );
      expect(k1?.type).toBe('varchar(255)');
      await sink.applyBatch(
        batch(['a', 'A', 'a ', 'ä'].map((k1, i) => ins(others, { k1, k2: '1', v: String(i) }))),
      );
      expect((await readRows('others', others)).map((r) => r.v).sort()).toEqual(['0', '1', '2', '3']);
      // A key longer than the bounded length is refused, never cut to collide with another; the
      // refused row is named even among others of one statement.
      const long = 'x'.repeat(256);
      const refused = sink.applyBatch(
        batch([
          ins(others, { k1: 'b', k2: '1', v: null }),
          ins(others, { k1: long, k2: '2', v: null }),
          ins(others, { k1: 'c', k2: '1', v: null }),
        ]),
      );
      await expect(refused).rejects.toThrow(RefusedChangeError);
      await expect(refused).rejects.toMatchObject({ table: others, key: { k1: long, k2: '2' } });
      expect(await count('others')).toBe(4);
    });

    it('maps tables with target_database and table.<schema>.<table>, and checks existing targets', async () => {
      const sink = newSink({ target_database: `${database}_other`, 'table.src.items': 'items_copy' });
      await sink.open([items]);
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'a', body: null, n: '1.50' })]));
      expect(await select(`SELECT id, name, body, n FROM \`${database}_other\`.items_copy`)).toEqual([
        { id: 1, name: 'a', body: null, n: '1.50' },
      ]);
      await expect(newSink().open([items, { ...items, schema: 'other' }])).rejects.toThrow(
        /src.items and other.items would both be written to/,
      );
      await admin.query('CREATE TABLE manual_nokey (id INT, name TEXT, body TEXT, n DECIMAL(12,2))');
      await admin.query('CREATE TABLE manual_short (id INT PRIMARY KEY)');
      await expect(newSink({ 'table.src.items': 'manual_nokey' }).open([items])).rejects.toThrow(
        /manual_nokey has no primary key or unique index on exactly the key columns \["id"\]/,
      );
      await expect(newSink({ 'table.src.items': 'manual_short' }).open([items])).rejects.toThrow(
        /manual_short lacks the columns \["name","body","n"\]/,
      );
      const absent = newSink({ 'table.src.items': 'absent', create_tables: 'false' }).open([items]);
      await expect(absent).rejects.toThrow(AppError);
      await expect(absent).rejects.toThrow(/absent of src.items does not exist and create_tables is false/);
    });
  });

  describe('preflight', () => {
    const settings = (port = 3306) =>
      mysqlConnectionOptions(parseMysqlDsn(`mysql://root@127.0.0.1:${port}/${database}`), { tls: {} });
    const clash = tableSchema('src', 'clash', [
      ['id*', 'integer'],
      ['Name', 'text'],
      ['name', 'text'],
    ]);

    it('passes an unreachable sink, and refuses tables it could not create or write', async () => {
      await expect(preflightMysqlSink(settings(1), {}, [clash], 2_000)).resolves.toBeUndefined();
      await expect(preflightMysqlSink(settings(), {}, [items], 2_000)).resolves.toBeUndefined();
      const refused = preflightMysqlSink(settings(), {}, [clash], 2_000);
      await expect(refused).rejects.toThrow(AppError);
      await expect(refused).rejects.toThrow(/"Name" and "name" are one name to MySQL/);
      await expect(
        preflightMysqlSink(
          settings(),
          { 'table.src.items': 'absent', create_tables: 'false' },
          [items],
          2_000,
        ),
      ).rejects.toThrow(/does not exist and create_tables is false/);
      await admin.query('CREATE TABLE IF NOT EXISTS preflight_short (id INT PRIMARY KEY)');
      await expect(
        preflightMysqlSink(settings(), { 'table.src.items': 'preflight_short' }, [items], 2_000),
      ).rejects.toThrow(/lacks the columns/);
    });
  });

  describe('values', () => {
    it('round-trips values of many types through batches and snapshot partitions alike', async () => {
      const sink = newSink({ 'table.src.typed': 'typed_batch' });
      await sink.open([typed]);
      await sink.applyBatch(batch(trickyRows.map((r) => ins(typed, r.source))));
      const expected = [...trickyRows]
        .sort((a, b) => (BigInt(a.source.id as string) < BigInt(b.source.id as string) ? -1 : 1))
        .map((r) => r.stored);
      expect(await readRows('typed_batch', typed)).toEqual(expected);

      const copied = newSink({ 'table.src.typed': 'typed_copy' });
      await copied.open([typed]);
      const buffer = Buffer.from(trickyRows.map((r) => copyLine(typed, r.source)).join(''));
      // Chunks of 97 bytes cut lines, escapes and multi-byte characters in the middle.
      const chunks = Array.from({ length: Math.ceil(buffer.length / 97) }, (_, i) =>
        buffer.subarray(i * 97, (i + 1) * 97),
      );
      const partition = { table: { schema: 'src', table: 'typed' }, partitionId: '0' };
      expect(await copied.writeSnapshotPartition(typed, partition, Readable.from(chunks))).toBe(3);
      expect(await readRows('typed_copy', typed)).toEqual(expected);
    });

    it('refuses a value MySQL cannot hold, naming table and key, and writes nothing of the batch', async () => {
      const sink = newSink({ 'table.src.typed': 'typed_refused' });
      await sink.open([typed]);
      const before = await sink.readCheckpoint();
      const bad = batch([
        ins(typed, { ...trickyRows[2]?.source, id: '1' }),
        ins(typed, { ...trickyRows[2]?.source, id: '2', day: 'infinity' }),
      ]);
      await expect(sink.applyBatch(bad)).rejects.toThrow(/src.typed with key \(id\)=\(2\): column "day"/);
      const nan = batch([ins(typed, { ...trickyRows[2]?.source, id: '3', ratio: 'NaN' })]);
      await expect(sink.applyBatch(nan)).rejects.toThrow(RefusedChangeError);
      expect(await count('typed_refused')).toBe(0);
      expect(await sink.readCheckpoint()).toEqual(before);
    });
  });

  describe('snapshot partitions', () => {
    const partition = (id: string) => ({ table: { schema: 'src', table: 'items' }, partitionId: id });
    const lines = (from: number, to: number) =>
      Readable.from(
        Array.from({ length: to - from }, (_, i) => `${from + i}\tname ${from + i}\t\\N\t${i}.25\n`),
      );

    it('writes a partition larger than one statement, and one whose stream fails leaves neither rows nor marker', async () => {
      const sink = newSink({ 'table.src.items': 'snap_items' });
      await sink.open([items]);
      expect(await sink.writeSnapshotPartition(items, partition('0'), lines(0, 2500))).toBe(2500);
      async function* failing() {
        for (let i = 5000; i < 6500; i++) yield `${i}\tx\t\\N\t1\n`;
        throw new Error('source connection lost');
      }
      await expect(
        sink.writeSnapshotPartition(items, partition('1'), Readable.from(failing())),
      ).rejects.toThrow('source connection lost');
      expect(await count('snap_items')).toBe(2500);
      expect(await sink.snapshotPartitionsDone()).toEqual([partition('0')]);
    });
  });

  describe('snapshot partitions by LOAD DATA', () => {
    it('names the key of a row the server refuses in a partition, and writes nothing of it', async () => {
      const sink = newSink({ 'table.src.others': 'snap_refused' });
      await sink.open([others]);
      const long = 'y'.repeat(256);
      const lines = ['a\t1\tone\n', `${long}\t2\ttwo\n`, 'c\t3\tthree\n'];
      const partition = { table: { schema: 'src', table: 'others' }, partitionId: '0' };
      const refused = sink.writeSnapshotPartition(others, partition, Readable.from(lines));
      await expect(refused).rejects.toThrow(RefusedChangeError);
      await expect(refused).rejects.toMatchObject({ table: others, key: { k1: long, k2: '2' } });
      expect(await count('snap_refused')).toBe(0);
      expect(await sink.snapshotPartitionsDone()).toEqual([]);
    });
  });

  describe('generated columns', () => {
    it('creates those whose expression MySQL computes alike, computed on batches and partitions', async () => {
      const priced: TableSchema = {
        ...tableSchema('src', 'priced', [
          ['id*', 'bigint'],
          ['price', 'numeric(12,2)'],
          ['qty', 'integer'],
          ['name', 'text'],
        ]),
        generated: [
          { name: 'total', typeName: 'numeric(14,2)', expression: '(price * (qty)::numeric)' },
          { name: 'label', typeName: 'text', expression: "(upper(name) || ' x'::text)" },
          { name: 'half', typeName: 'numeric(14,2)', expression: '(price / (2)::numeric)' },
        ],
      };
      const sink = newSink({ 'table.src.priced': 'gen_priced' });
      await sink.open([priced]);
      const columns = await select<{ name: string; generated: string }>(
        `SELECT COLUMN_NAME AS name, GENERATION_EXPRESSION AS generated FROM information_schema.COLUMNS
          WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'gen_priced' ORDER BY ORDINAL_POSITION`,
        [database],
      );
      // The division is left out: MySQL's and PostgreSQL's differ for integers.
      expect(columns.map((c) => c.name)).toEqual(['id', 'price', 'qty', 'name', 'total', 'label']);
      const partition = { table: { schema: 'src', table: 'priced' }, partitionId: '0' };
      await sink.writeSnapshotPartition(
        priced,
        partition,
        Readable.from(['1\t2.50\t3\tab\n', '2\t\\N\t1\tc\n']),
      );
      await sink.applyBatch(
        batch([
          ins(priced, { id: '3', price: '0.10', qty: '7', name: 'é' }),
          upd(priced, { id: '1', price: '2.50', qty: '4', name: 'ab' }),
        ]),
      );
      expect(await select('SELECT id, total, label FROM gen_priced ORDER BY id')).toEqual([
        { id: '1', total: '10.00', label: 'AB x' },
        { id: '2', total: null, label: 'C x' },
        { id: '3', total: '0.70', label: 'É x' },
      ]);
    });
  });

  describe('a sink user without DROP', () => {
    it('snapshots, resets a table, applies a truncate and stores its checkpoint', async () => {
      const user = `nodrop_${randomBytes(4).toString('hex')}`;
      const password = randomBytes(12).toString('hex');
      await admin.query(`CREATE USER '${user}'@'127.0.0.1' IDENTIFIED BY '${password}'`);
      try {
        await admin.query(
          `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER ON \`${database}\`.* TO '${user}'@'127.0.0.1'`,
        );
        const dsn = parseMysqlDsn(`mysql://${user}:${password}@127.0.0.1:3306/${database}`);
        const sink = createMysqlSink({
          pipelineId: randomUUID(),
          connection: mysqlConnectionOptions(dsn, { tls: {}, password: dsn.password }),
          properties: { 'table.src.items': 'nodrop_items' },
          state: memorySinkState(),
        });
        sinks.push(sink);
        await sink.open([items]);
        const partition = { table: { schema: 'src', table: 'items' }, partitionId: '0' };
        const rows = ['1\ta\t\\N\t1.00\n', '2\tb\t\\N\t2.00\n'];
        expect(await sink.writeSnapshotPartition(items, partition, Readable.from(rows))).toBe(2);
        expect(await sink.snapshotPartitionsDone()).toEqual([partition]);
        await sink.resetTable(items);
        expect(await count('nodrop_items')).toBe(0);
        expect(await sink.snapshotPartitionsDone()).toEqual([]);
        await sink.applyBatch(batch([ins(items, { id: '3', name: 'c', body: null, n: null }), trunc(items)]));
        await sink.applyBatch(batch([ins(items, { id: '4', name: 'd', body: null, n: null })], 1, 0xabcn));
        expect(await readRows('nodrop_items', items)).toEqual([{ id: 4, name: 'd', body: null, n: null }]);
        expect(await sink.readCheckpoint()).toEqual({ lsn: 0xabcn, epoch: 1 });
        // The user really lacks DROP: TRUNCATE is refused to it.
        const own = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user, password, database });
        try {
          await expect(own.query('TRUNCATE TABLE nodrop_items')).rejects.toMatchObject({ errno: 1142 });
        } finally {
          await own.end();
        }
      } finally {
        await admin.query(`DROP USER IF EXISTS '${user}'@'127.0.0.1'`);
      }
    });
  });

  describe('applyBatch', () => {
    const props = { 'table.src.items': 'apply_items', 'table.src.others': 'apply_others' };

    it('applies inserts, updates (a key change too), deletes and truncates, with the checkpoint', async () => {
      const sink = newSink(props);
      await sink.open([items, others]);
      expect(await sink.readCheckpoint()).toBeNull();
      await sink.applyBatch(
        batch([
          ins(items, { id: '1', name: 'a', body: 'x', n: '1.00' }),
          ins(items, { id: '2', name: 'b', body: 'y', n: '2.00' }),
          ins(items, { id: '3', name: 'c', body: 'z', n: null }),
          ins(others, { k1: 'p', k2: '1', v: 'one' }),
        ]),
      );
      await sink.applyBatch(
        batch(
          [
            upd(items, { id: '1', name: 'a2', body: 'x', n: '1.50' }),
            // The key changes: the old row goes.
            upd(items, { id: '20', name: 'b', body: 'y', n: '2.00' }, { key: { id: '2' } }),
            del(items, { id: '3' }),
            ins(items, { id: '3', name: 'c again', body: null, n: null }),
            upd(others, { k1: 'q', k2: '1', v: 'moved' }, { key: { k1: 'p', k2: '1' } }),
          ],
          1,
          0xf000000abn,
        ),
      );
      expect(await sink.readCheckpoint()).toEqual({ lsn: 0xf000000abn, epoch: 1 });
      expect(await readRows('apply_items', items)).toEqual([
        { id: 1, name: 'a2', body: 'x', n: '1.50' },
        { id: 3, name: 'c again', body: null, n: null },
        { id: 20, name: 'b', body: 'y', n: '2.00' },
      ]);
      expect(await readRows('apply_others', others)).toEqual([{ k1: 'q', k2: 1, v: 'moved' }]);

      await sink.applyBatch(
        batch(
          [trunc(items, others), ins(items, { id: '9', name: 'after', body: null, n: null })],
          1,
          0xf000000acn,
        ),
      );
      expect(await readRows('apply_items', items)).toEqual([{ id: 9, name: 'after', body: null, n: null }]);
      expect(await count('apply_others')).toBe(0);
    });

    it('writes columns whose names hold backticks, quotes and question marks', async () => {
      const weird = tableSchema('src', 'we`ird?', [
        ['id?*', 'integer'],
        ['a`b?', 'text'],
        ['naïve "x"', 'text'],
      ]);
      const sink = newSink();
      await sink.open([weird]);
      await sink.applyBatch(batch([ins(weird, { 'id?': '1', 'a`b?': '?', 'naïve "x"': "'?'" })]));
      await sink.applyBatch(
        batch([upd(weird, { 'id?': '1', 'a`b?': 'b?' }, { unchangedToast: ['naïve "x"'] })]),
      );
      expect(await select('SELECT * FROM `we``ird?`')).toEqual([
        { 'id?': 1, 'a`b?': 'b?', 'naïve "x"': "'?'" },
      ]);
    });
  });

  describe('schema changes', () => {
    it('plans and applies ALTER TABLE statements, skipping those already made', async () => {
      const sink = newSink({ 'table.src.items': 'schema_items' });
      await sink.open([items]);
      await sink.applyBatch(batch([ins(items, { id: '1', name: 'a', body: 'b', n: '1.00' })]));
      const proposed = tableSchema('src', 'items', [
        ['id*', 'bigint'],
        ['title', 'text'],
        ['n', 'numeric(14,2)'],
        ['at', 'timestamp with time zone'],
        ['flag', 'boolean'],
      ]);
      const changes = diffSchemas(items, proposed);
      expect(changes.map((c) => c.kind).sort()).toEqual(
        ['add_column', 'add_column', 'alter_type', 'alter_type', 'drop_column', 'rename_column'].sort(),
      );
      const withDefault = changes.map((c) =>
        c.kind === 'add_column' && c.column === 'flag' ? { ...c, existing_value: 't' } : c,
      );
      const plan = sink.planSchemaChange(items, withDefault);
      expect(plan.every((s) => /^(ALTER TABLE|UPDATE) `/.test(s))).toBe(true);
      // The column `at` is added by hand before the plan runs: its statement is skipped.
      await admin.query('ALTER TABLE schema_items ADD COLUMN `at` DATETIME(6) NULL');
      const { skipped } = await sink.applySchemaChange(proposed, plan);
      expect(skipped).toEqual([plan.find((s) => s.includes('ADD COLUMN `at`'))]);
      // Running the plan again (after a failure part way) skips what is there and converges.
      const again = await sink.applySchemaChange(proposed, plan);
      expect(again.skipped.length).toBeGreaterThan(0);
      await sink.applyBatch(
        batch([
          ins(proposed, {
            id: '2',
            title: 't',
            n: '123456789012.34',
            at: '2024-01-01 00:00:00+02',
            flag: 'f',
          }),
        ]),
      );
      expect(await readRows('schema_items', proposed)).toEqual([
        { id: '1', title: 'a', n: '1.00', at: null, flag: 1 },
        { id: '2', title: 't', n: '123456789012.34', at: '2023-12-31 22:00:00.000000', flag: 0 },
      ]);
    });
  });
});
