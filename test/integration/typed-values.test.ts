import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ColumnSchema, Row } from '../../src/core/change.js';
import { copyTextRows } from '../../src/core/copy-text.js';
import { arrayOf, rowValues, type Value, valueTypeOf } from '../../src/core/values.js';
import { createDatabase } from '../support/pg-cluster.js';

// The settings the source sessions run with: they fix the text form the values arrive in.
const SESSION = '-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c TimeZone=UTC';

const clusters = inject('pgClusters');

// Every type valueTypeOf knows by OID, as a SQL type name.
const BUILT_IN_TYPES = [
  'boolean',
  'smallint',
  'integer',
  'bigint',
  'oid',
  'real',
  'double precision',
  'numeric',
  'text',
  'character varying',
  'character',
  'name',
  '"char"',
  'uuid',
  'json',
  'jsonb',
  'bytea',
  'date',
  'time',
  'timetz',
  'timestamp',
  'timestamptz',
  'interval',
];

describe.each(clusters)('typed values from $label', (cluster) => {
  const dbName = `typed_values_${cluster.label.replace(/\W/g, '_')}`;
  let client: pg.Client;

  beforeAll(async () => {
    const url = await createDatabase(cluster.adminUrl, dbName);
    client = new pg.Client({ connectionString: url, options: SESSION });
    await client.connect();
    await client.query(`
      CREATE TYPE mood AS ENUM ('sad', 'happy');
      CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
      CREATE TABLE typed (
        id integer PRIMARY KEY,
        b boolean, i2 smallint, i4 integer, i8 bigint, o oid, f4 real, f8 double precision,
        n numeric(30,10), nn numeric, t text, vc varchar(20), bp char(5), nm name, ch "char",
        u uuid, j json, jb jsonb, by bytea, d date, tm time(3), ttz timetz, ts timestamp,
        tstz timestamptz, iv interval, m mood, dom posint,
        ai int[], at text[], ajb jsonb[], aby bytea[], atstz timestamptz[], ad date[], am mood[],
        an numeric[], af float8[]
      );
      INSERT INTO typed VALUES
        (1, true, 1, 2, 3, 4, 1.5, 0.1, 12.5, 1, 'plain', 'vc', 'ab', 'nm', 'c',
         'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2]}', '{"b": {"c": null}}', '\\x0aff',
         '2024-01-02', '03:04:05.678', '03:04:05+05:30', '2024-01-02 03:04:05.678901',
         '2024-01-02 03:04:05.678901+00', '1 year 2 mons 3 days 04:05:06.789', 'happy', 5,
         '{1,2,NULL}', '{"a b","c\\"d",NULL,"NULL",""}', ARRAY['{"k": [1]}', 'null']::jsonb[],
         ARRAY['\\x0aff', '\\x']::bytea[], '{"2024-01-02 03:04:05+00",infinity}', '{2024-01-02}',
         '{sad,happy}', '{1.10,NaN}', '{0.1,-Infinity}'),
        (2, false, -32768, 2147483647, -9223372036854775808, 4294967295, 'NaN', '-Infinity',
         -0.0000000001, 'NaN', E'tab\\there\\nnew\\\\line é 漢字 🎉', 'NULL', '', '\\N', '\\',
         NULL, '[]', '"s"', '\\x', 'infinity', '24:00:00', '00:00:00-08', '0044-03-15 12:00:00 BC',
         '2024-06-01 12:00:00+05:30', '-1 days +02:03:00', 'sad', 1,
         '[0:1][1:2]={{1,2},{3,4}}', '{}', '{}', '{NULL}', '{-infinity}', '{"0044-03-15 BC"}', '{}',
         '{}', '{}'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, '-infinity', NULL, NULL, 'infinity', '0044-03-15 12:00:00+00 BC', NULL,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    `);
  });

  afterAll(async () => {
    await client?.end();
  });

  it('types a built-in type the same by OID and by name, and its array too', async () => {
    const { rows } = await client.query<{ oid: number; name: string; array_oid: number; array_name: string }>(
      `SELECT t.oid::int AS oid, format_type(t.oid, NULL) AS name,
              t.typarray::int AS array_oid, format_type(t.typarray, NULL) AS array_name
         FROM unnest($1::text[]) AS n JOIN pg_type t ON t.oid = n::regtype`,
      [BUILT_IN_TYPES],
    );
    expect(rows).toHaveLength(BUILT_IN_TYPES.length);
    for (const row of rows) {
      const byOid = valueTypeOf({ typeOid: row.oid, typeName: row.name });
      expect(byOid, row.name).not.toBe('other');
      expect(valueTypeOf({ typeOid: 0, typeName: row.name }), row.name).toBe(byOid);
      expect(valueTypeOf({ typeOid: row.array_oid, typeName: row.array_name }), row.array_name).toBe(
        arrayOf(byOid as Exclude<typeof byOid, object>),
      );
      expect(valueTypeOf({ typeOid: 0, typeName: row.array_name }), row.array_name).toBe(
        arrayOf(byOid as Exclude<typeof byOid, object>),
      );
    }
  });

  it('reads COPY text rows into typed values', async () => {
    const { rows: attributes } = await client.query<{ name: string; type_oid: number; type_name: string }>(
      `SELECT attname AS name, atttypid::int AS type_oid, format_type(atttypid, atttypmod) AS type_name
         FROM pg_attribute WHERE attrelid = 'typed'::regclass AND attnum > 0 AND NOT attisdropped
        ORDER BY attnum`,
    );
    const columns: ColumnSchema[] = attributes.map((a) => ({
      name: a.name,
      typeOid: a.type_oid,
      typeName: a.type_name,
      nullable: true,
      isKey: a.name === 'id',
    }));
    expect(valueTypeOf(columns.find((c) => c.name === 'm')!)).toBe('other');
    expect(valueTypeOf(columns.find((c) => c.name === 'dom')!)).toBe('other');
    expect(valueTypeOf(columns.find((c) => c.name === 'am')!)).toBe(arrayOf('other'));

    const stream = client.query(copyTo('COPY (SELECT * FROM typed ORDER BY id) TO STDOUT'));
    const texts: Row[] = [];
    for await (const batch of copyTextRows(stream, columns, 2)) texts.push(...batch);
    const values = texts.map((row) => rowValues(columns, row));

    const expected: Record<string, Value>[] = [
      {
        id: 1,
        b: true,
        i2: 1,
        i4: 2,
        i8: 3n,
        o: 4n,
        f4: 1.5,
        f8: 0.1,
        n: '12.5000000000',
        nn: '1',
        t: 'plain',
        vc: 'vc',
        bp: 'ab   ',
        nm: 'nm',
        ch: 'c',
        u: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        j: { a: [1, 2] },
        jb: { b: { c: null } },
        by: Buffer.from([0x0a, 0xff]),
        d: '2024-01-02',
        tm: '03:04:05.678',
        ttz: '03:04:05+05:30',
        ts: '2024-01-02T03:04:05.678901',
        tstz: '2024-01-02T03:04:05.678901Z',
        iv: '1 year 2 mons 3 days 04:05:06.789',
        m: 'happy',
        dom: '5',
        ai: [1, 2, null],
        at: ['a b', 'c"d', null, 'NULL', ''],
        ajb: [{ k: [1] }, null],
        aby: [Buffer.from([0x0a, 0xff]), Buffer.alloc(0)],
        atstz: ['2024-01-02T03:04:05Z', 'infinity'],
        ad: ['2024-01-02'],
        am: ['sad', 'happy'],
        an: ['1.10', 'NaN'],
        af: [0.1, -Infinity],
      },
      {
        id: 2,
        b: false,
        i2: -32768,
        i4: 2147483647,
        i8: -9223372036854775808n,
        o: 4294967295n,
        f4: Number.NaN,
        f8: -Infinity,
        n: '-0.0000000001',
        nn: 'NaN',
        t: 'tab\there\nnew\\line é 漢字 🎉',
        vc: 'NULL',
        bp: '     ',
        nm: '\\N',
        ch: '\\',
        u: null,
        j: [],
        jb: 's',
        by: Buffer.alloc(0),
        d: 'infinity',
        tm: '24:00:00',
        ttz: '00:00:00-08:00',
        ts: '0044-03-15 12:00:00 BC',
        tstz: '2024-06-01T06:30:00Z',
        iv: '-1 days +02:03:00',
        m: 'sad',
        dom: '1',
        ai: [
          [1, 2],
          [3, 4],
        ],
        at: [],
        ajb: [],
        aby: [null],
        atstz: ['-infinity'],
        ad: ['0044-03-15 BC'],
        am: [],
        an: [],
        af: [],
      },
      {
        ...Object.fromEntries(columns.map((c) => [c.name, null])),
        id: 3,
        d: '-infinity',
        ts: 'infinity',
        tstz: '0044-03-15 12:00:00+00 BC',
      },
    ];
    expect(values).toEqual(expected);
  });

  it('reads values near the limits of their types', async () => {
    const stream = client.query(
      copyTo(`COPY (SELECT
        '1e308'::float8, '4.9e-324'::float8, '3.4028235e38'::float4, 'Infinity'::numeric,
        '294276-12-31 23:59:59.999999+00'::timestamptz, '4713-01-01 BC'::date, '5874897-12-31'::date,
        '-178956970 years -7 mons -2147483647 days -2562047788:00:54.775807'::interval,
        repeat('x', 100000) || E'\\t' || repeat('é', 50000)
      ) TO STDOUT`),
    );
    const columns = [
      { name: 'f8', typeOid: 701, typeName: 'double precision' },
      { name: 'f8min', typeOid: 701, typeName: 'double precision' },
      { name: 'f4', typeOid: 700, typeName: 'real' },
      { name: 'ninf', typeOid: 1700, typeName: 'numeric' },
      { name: 'tmax', typeOid: 1184, typeName: 'timestamp with time zone' },
      { name: 'dbc', typeOid: 1082, typeName: 'date' },
      { name: 'dmax', typeOid: 1082, typeName: 'date' },
      { name: 'imin', typeOid: 1186, typeName: 'interval' },
      { name: 'long', typeOid: 25, typeName: 'text' },
    ].map((c) => ({ ...c, nullable: true, isKey: false }));
    const texts: Row[] = [];
    for await (const batch of copyTextRows(stream, columns)) texts.push(...batch);
    expect(texts.map((row) => rowValues(columns, row))).toEqual([
      {
        f8: 1e308,
        f8min: 5e-324,
        f4: 3.4028235e38,
        ninf: 'Infinity',
        tmax: '294276-12-31 23:59:59.999999+00',
        dbc: '4713-01-01 BC',
        dmax: '5874897-12-31',
        imin: '-178956970 years -7 mons -2147483647 days -2562047788:00:54.775807',
        long: `${'x'.repeat(100000)}\t${'é'.repeat(50000)}`,
      },
    ]);
  });
});
