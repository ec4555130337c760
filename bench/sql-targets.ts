import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import pg from 'pg';
import { createDatabase } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import {
  backlogChanges,
  type CheckResult,
  type Digest,
  type RunShape,
  runTag,
  type SinkTarget,
} from './sink-target.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

export const MYSQL_ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

const tableName = SNAPSHOT_TABLE.split('.')[1] as string;

/**
 * The row text both databases can build alike: `id|a|b|c|d`, `c` in UTC with microseconds, `d`
 * with its two decimals. Summed, the per-row hashes make a checksum of the table that does not
 * depend on the order rows are read in (the row text holds the key).
 */
export async function pgDigest(url: string, table = SNAPSHOT_TABLE): Promise<Digest> {
  const [row] = await sqlOn<{ rows: string; sum: string | null }>(
    url,
    `SELECT count(*) AS rows,
            sum(('x' || substr(md5(t.id || '|' || t.a || '|' || t.b || '|' ||
                 to_char(t.c AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '|' || t.d), 1, 8))::bit(32)::bigint) AS sum
       FROM ${table} t`,
  );
  return { rows: Number(row?.rows), sum: String(row?.sum ?? '0') };
}

async function mysqlDigest(db: Connection, database: string, table: string): Promise<Digest> {
  const [rows] = await db.query<RowDataPacket[]>(
    `SELECT COUNT(*) AS n_rows,
            SUM(CAST(CONV(LEFT(MD5(CONCAT_WS('|', id, a, b, DATE_FORMAT(c, '%Y-%m-%d %H:%i:%s.%f'), d)), 8), 16, 10) AS UNSIGNED)) AS sum
       FROM \`${database}\`.\`${table}\``,
  );
  return { rows: Number(rows[0]?.n_rows), sum: String(rows[0]?.sum ?? '0') };
}

/** The check of a table sink, after either phase: its digest equal to the source's. */
export function digestCheck(sinkDigest: () => Promise<Digest>) {
  return async (source: Digest): Promise<CheckResult> => {
    const sink = await sinkDigest();
    return sink.rows === source.rows && sink.sum === source.sum
      ? { ok: true, detail: `${sink.rows.toLocaleString('en-US')} rows, checksum equal to the source's` }
      : { ok: false, detail: `sink ${JSON.stringify(sink)} against source ${JSON.stringify(source)}` };
  };
}

/** The ids a table sink's drain polls look up: the backlog's first and last inserted rows. */
export const markerIds = (shape: RunShape) => `${shape.rows + 1}, ${shape.rows + shape.transactions}`;

/**
 * Backlog changes known visible from the backlog's first and last inserted rows: all of them once
 * the last is there, the first transaction's two once the first is, else none.
 */
export function drainedFrom(ids: unknown[], shape: RunShape): number {
  const found = ids.map(Number);
  if (found.includes(shape.rows + shape.transactions)) return backlogChanges(shape);
  return found.includes(shape.rows + 1) ? 2 : 0;
}

/**
 * A database of its own on the sink PostgreSQL cluster; the pipeline creates the table. The drain
 * polls look for the backlog's first and last inserted rows only (by key): batches are applied in
 * commit order, each in one transaction, and the last row is the backlog's last change, so once it
 * is visible so is every change before it; the checksum after the drain checks that.
 */
export async function postgresTarget(sinkAdminUrl: string, shape: RunShape): Promise<SinkTarget> {
  const name = 'sinks_postgres';
  const url = await createDatabase(sinkAdminUrl, name);
  // One session for the polls, so that a poll costs a query and not a connection.
  const poller = new pg.Client({ connectionString: url });
  await poller.connect();
  const check = digestCheck(() => pgDigest(url));
  return {
    kind: 'postgres',
    dsn: url,
    properties: {},
    where: `database \`${name}\`, table \`${SNAPSHOT_TABLE}\``,
    checkSnapshot: check,
    markDrainStart: async () => {},
    drainedChanges: async () => {
      const { rows } = await poller.query<{ id: string }>(
        `SELECT id FROM ${SNAPSHOT_TABLE} WHERE id IN (${markerIds(shape)})`,
      );
      return drainedFrom(
        rows.map((r) => r.id),
        shape,
      );
    },
    checkDrain: check,
    cleanUp: async () => {
      await poller.end();
      await sqlOn(sinkAdminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/**
 * A fresh MariaDB database (`sinks_<random>`), dropped after the run; the pipeline creates the
 * table. Its drain polls are the postgres sink's.
 */
export async function mysqlTarget(shape: RunShape): Promise<SinkTarget> {
  const database = `sinks_${runTag()}`;
  const db = await mysql.createConnection({
    ...MYSQL_ADMIN,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  await db.query(`CREATE DATABASE \`${database}\``);
  const check = digestCheck(() => mysqlDigest(db, database, tableName));
  return {
    kind: 'mysql',
    dsn: `mysql://root@127.0.0.1:3306/${database}`,
    properties: {},
    where: `database \`${database}\`, table \`${tableName}\``,
    checkSnapshot: check,
    markDrainStart: async () => {},
    drainedChanges: async () => {
      const [rows] = await db.query<RowDataPacket[]>(
        `SELECT id FROM \`${database}\`.\`${tableName}\` WHERE id IN (${markerIds(shape)})`,
      );
      return drainedFrom(
        rows.map((r) => r.id),
        shape,
      );
    },
    checkDrain: check,
    cleanUp: async () => {
      try {
        await db.query(`DROP DATABASE IF EXISTS \`${database}\``);
      } finally {
        await db.end();
      }
    },
  };
}
