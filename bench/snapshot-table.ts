import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { sqlOn, tableDigest } from '../test/support/replication-fixture.js';

/** The table every snapshot copies, identical on the source and on every sink database. */
export const SNAPSHOT_TABLE = 'public.bench_snapshot';
export const SNAPSHOT_TABLE_DDL = `CREATE TABLE ${SNAPSHOT_TABLE} (
  id bigint PRIMARY KEY, a text, b integer, c timestamptz, d numeric(12, 2)
)`;

/** Rows of the snapshot table: two million at `BENCH_SCALE=1`. */
export const snapshotRows = (scale: number): number => Math.max(1, Math.round(2_000_000 * scale));

/** The source table as every system finds it. */
export interface SnapshotSource {
  url: string;
  rows: number;
  /** pg_total_relation_size of the source table (heap, primary key index, TOAST). */
  tableBytes: number;
  /** Size of its primary key index alone. */
  indexBytes: number;
  /** Bytes of `COPY ... TO STDOUT` of the table in text format: what a COPY pipe carries. */
  copyBytes: number;
  /** Digest of every row in key order, to compare each sink against. */
  md5: string;
  fillSeconds: number;
}

/** Bytes of the table's text-format COPY, read once and counted in this process. */
async function copyTextBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let bytes = 0;
  try {
    await pipeline(
      client.query(copyTo(`COPY ${SNAPSHOT_TABLE} TO STDOUT`)),
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          bytes += chunk.length;
          callback();
        },
      }),
    );
  } finally {
    await client.end();
  }
  return bytes;
}

/**
 * Creates and fills the source table, then vacuums and analyses it (hint bits set, visibility
 * map and statistics current, as for a table that has been in use), so that no system pays for
 * first reads the others do not.
 */
export async function fillSnapshotTable(url: string, rows: number): Promise<SnapshotSource> {
  const started = performance.now();
  await sqlOn(url, SNAPSHOT_TABLE_DDL);
  // a: 32 hex characters; c: microsecond timestamps; d: two decimals; all distinct per row.
  await sqlOn(
    url,
    `INSERT INTO ${SNAPSHOT_TABLE}
     SELECT i, md5(i::text), (i * 7919) % 1000003,
            timestamptz '2024-01-01 00:00:00+00' + i * interval '1.234567 seconds',
            ((i * 31) % 10000000) / 100.0
       FROM generate_series(1::bigint, ${rows}) AS i`,
  );
  await sqlOn(url, `VACUUM (ANALYZE) ${SNAPSHOT_TABLE}`);
  await sqlOn(url, 'CHECKPOINT');
  const fillSeconds = (performance.now() - started) / 1000;
  const [size] = await sqlOn<{ bytes: string; index: string }>(
    url,
    `SELECT pg_total_relation_size('${SNAPSHOT_TABLE}') AS bytes, pg_indexes_size('${SNAPSHOT_TABLE}') AS index`,
  );
  const digest = await tableDigest(url, SNAPSHOT_TABLE, 'id');
  if (digest.rows !== rows) throw new Error(`the source table holds ${digest.rows} rows, expected ${rows}`);
  return {
    url,
    rows,
    tableBytes: Number(size?.bytes),
    indexBytes: Number(size?.index),
    copyBytes: await copyTextBytes(url),
    md5: digest.md5,
    fillSeconds,
  };
}
