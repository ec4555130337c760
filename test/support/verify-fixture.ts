/**
 * A PostgreSQL source for verifying a sink of another kind: tables of many types, filled, copied
 * into the sink as the snapshot does (COPY text through `writeSnapshotPartition`), and compared.
 */
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { TableSchema } from '../../src/core/change.js';
import { PG_TEXT_SESSION_OPTIONS } from '../../src/core/pg-comparison.js';
import type { Sink } from '../../src/core/sink.js';
import type { SinkComparison } from '../../src/core/table-comparison.js';
import { createPostgresSource } from '../../src/source/postgres/postgres-source.js';
import { sourceComparison } from '../../src/source/postgres/source-comparison.js';
import { DEFAULT_VERIFY_LIMITS, TableVerifier, type VerifyLimits } from '../../src/verify/table-verifier.js';
import { sqlOn } from './replication-fixture.js';

export const VERIFY_TABLES = ['items', 'words', 'pairs', 'things', 'dated'];

const TABLES = `
  CREATE TABLE items (id bigint PRIMARY KEY, small smallint, n integer, price numeric(12,2), name text,
    at timestamptz, local_at timestamp(3), day date, clock time, flag boolean, data bytea, uid uuid,
    doc jsonb, code char(5), tags text[], days date[], ratio double precision);
  CREATE TABLE words (word text PRIMARY KEY, n integer);
  CREATE TABLE pairs (a integer, b text, v text, PRIMARY KEY (a, b));
  CREATE TABLE things (id uuid PRIMARY KEY, v integer);
  CREATE TABLE dated (day date, amount numeric(10,2), v text, PRIMARY KEY (day, amount));
`;

// Every seventh row (id % 7 = 5) has NULLs; row 1 has the edge values (24:00, an emoji, quotes and tabs).
const SEED = `
  INSERT INTO items SELECT i, (i % 30000) - 15000, -i, i * 1.5,
    CASE WHEN i = 1 THEN E'tab\\there "dq" ''sq'' \\\\ 😀 中文' ELSE 'item ' || i || E'\\t''😀' END,
    '2024-01-01 00:00:00+00'::timestamptz + i * interval '1.000001 second',
    '2024-01-01 00:00:00'::timestamp + i * interval '1.001 second',
    '2024-01-01'::date + (i % 4000),
    CASE WHEN i = 1 THEN '24:00:00'::time ELSE '00:00:00'::time + i * interval '1.25 second' END,
    i % 2 = 0, decode(md5(i::text), 'hex'), md5(i::text)::uuid,
    jsonb_build_object('i', i, 'name', E'x"y\\tz', 'list', jsonb_build_array(1, 2.50, 'é', NULL)),
    'c' || (i % 100), ARRAY['a b', 'c,"d"', NULL, i::text], ARRAY['2024-02-29'::date, NULL],
    i / 3.0
  FROM generate_series(1, 30000) i;
  UPDATE items SET small = NULL, n = NULL, price = NULL, name = NULL, at = NULL, local_at = NULL,
    day = NULL, clock = NULL, flag = NULL, data = NULL, uid = NULL, doc = NULL, code = NULL,
    tags = NULL, days = NULL, ratio = NULL WHERE id % 7 = 5;
  INSERT INTO words SELECT 'w' || i || CASE WHEN i % 3 = 0 THEN 'Z' WHEN i % 3 = 1 THEN 'a' ELSE 'é' END, i
    FROM generate_series(1, 3000) i;
  INSERT INTO pairs SELECT i % 50, 'b' || i, 'v' || i FROM generate_series(1, 3000) i;
  INSERT INTO things SELECT md5(i::text)::uuid, i FROM generate_series(1, 3000) i;
  INSERT INTO dated SELECT '2024-01-01'::date + (i % 40), (i / 40) * 2.5 - 50, 'v' || i FROM generate_series(1, 3000) i;
`;

/** Creates and fills the source tables; their shapes as the source describes them. */
export async function seedSource(source: string): Promise<Map<string, TableSchema>> {
  await sqlOn(source, TABLES + SEED);
  const src = createPostgresSource({ connectionString: source });
  await src.connect();
  try {
    const described = await src.describeTables(VERIFY_TABLES.map((table) => ({ schema: 'public', table })));
    return new Map(described.map((shape) => [shape.table, shape]));
  } finally {
    await src.close();
  }
}

/** Writes every source table into an opened sink as the snapshot does: its COPY text, one partition. */
export async function copyIntoSink(
  source: string,
  sink: Sink,
  shapes: Map<string, TableSchema>,
): Promise<void> {
  const client = new pg.Client({ connectionString: source, options: PG_TEXT_SESSION_OPTIONS });
  await client.connect();
  try {
    for (const shape of shapes.values()) {
      const copy = client.query(copyTo(`COPY public.${shape.table} TO STDOUT`));
      await sink.writeSnapshotPartition(shape, { table: shape, partitionId: '0' }, copy);
    }
  } finally {
    await client.end();
  }
}

/** Compares one table between the source and a sink's comparison. */
export async function verifyTable(
  source: string,
  sinkSide: SinkComparison,
  shape: TableSchema,
  limits: Partial<VerifyLimits> = {},
) {
  const srcSide = sourceComparison({ connectionString: source });
  const [sourceReader, sinkReader] = await Promise.all([srcSide.open(), sinkSide.open()]);
  try {
    return await new TableVerifier({
      table: shape,
      source: srcSide,
      sourceReader,
      sink: sinkSide,
      sinkReader,
      waitDurable: async () => {},
      signal: new AbortController().signal,
      limits: { ...DEFAULT_VERIFY_LIMITS, segmentRows: 1000, downloadRows: 100, ...limits },
      onRowsRead: () => {},
    }).run();
  } finally {
    await Promise.all([sourceReader.close(), sinkReader.close()]);
  }
}
