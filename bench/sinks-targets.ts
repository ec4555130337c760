import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import pg from 'pg';
import { createDatabase } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

/** The sink types the sink benchmark runs, the reference first. */
export const SINK_KINDS = ['postgres', 'mysql', 'redis'] as const;
export type SinkKind = (typeof SINK_KINDS)[number];

export const MYSQL_ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };
export const REDIS_URL = 'redis://127.0.0.1:6379/0';

/** Rows and a checksum of the table: count, and the sum of the first 32 bits of each row's md5. */
export interface Digest {
  rows: number;
  sum: string;
}

export const sameDigest = (a: Digest, b: Digest) => a.rows === b.rows && a.sum === b.sum;

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

/** What the drain checks found, for the report. */
export interface CheckResult {
  ok: boolean;
  detail: string;
}

/** The parameters of one run: the snapshot's rows and the backlog that follows it. */
export interface RunShape {
  /** Rows of the source table at the snapshot (ids 1..rows). */
  rows: number;
  /** Transactions of the backlog: each updates one existing row, then inserts the row `rows + k`. */
  transactions: number;
}

export const backlogChanges = (s: RunShape) => 2 * s.transactions;

/**
 * One sink under test: where it is, how a pipeline addresses it, and how the benchmark reads what
 * it holds. Each is made fresh for a run and removed after it.
 */
export interface SinkTarget {
  kind: SinkKind;
  /** The DSN of the sink connection. */
  dsn: string;
  /** `sink.properties` of the pipeline: the defaults, but for the Redis stream key. */
  properties: Record<string, string>;
  /** Where the data lands, for the report. */
  where: string;
  /** After the snapshot: the sink holds exactly the source's rows. */
  checkSnapshot(source: Digest): Promise<CheckResult>;
  /** Just before the resume (untimed): remembers where the backlog starts. */
  markDrainStart(): Promise<void>;
  /**
   * Changes of the backlog seen in the sink so far (postgres and mysql: none, the first
   * transaction's, or all); the drain is done at `backlogChanges`.
   */
  drainedChanges(): Promise<number>;
  /** After the drain: the sink holds exactly the source's rows, or every change once. */
  checkDrain(source: Digest): Promise<CheckResult>;
  /** Removes what the run left in the sink server: its database, or its keys. */
  cleanUp(pipelineId: string | undefined): Promise<void>;
}

const tableName = SNAPSHOT_TABLE.split('.')[1] as string;

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
  const visible = async () => {
    const { rows } = await poller.query<{ id: string }>(
      `SELECT id FROM ${SNAPSHOT_TABLE} WHERE id IN (${shape.rows + 1}, ${shape.rows + shape.transactions})`,
    );
    return drainedFrom(
      rows.map((r) => Number(r.id)),
      shape,
    );
  };
  const check = async (source: Digest): Promise<CheckResult> => {
    const sink = await pgDigest(url);
    return sameDigest(sink, source)
      ? { ok: true, detail: `${sink.rows.toLocaleString('en-US')} rows, checksum equal to the source's` }
      : { ok: false, detail: `sink ${JSON.stringify(sink)} against source ${JSON.stringify(source)}` };
  };
  return {
    kind: 'postgres',
    dsn: url,
    properties: {},
    where: `database \`${name}\`, table \`${SNAPSHOT_TABLE}\``,
    checkSnapshot: check,
    markDrainStart: async () => {},
    drainedChanges: visible,
    checkDrain: check,
    cleanUp: async () => {
      await poller.end();
      await sqlOn(sinkAdminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/**
 * Backlog changes known visible from the backlog's first and last inserted rows: all of them once
 * the last is there, the first transaction's two once the first is, else none.
 */
function drainedFrom(ids: number[], shape: RunShape): number {
  if (ids.includes(shape.rows + shape.transactions)) return backlogChanges(shape);
  return ids.includes(shape.rows + 1) ? 2 : 0;
}

/**
 * A fresh MariaDB database (`sinks_<random>`), dropped after the run; the pipeline creates the
 * table. Its drain polls are the postgres sink's.
 */
export async function mysqlTarget(shape: RunShape): Promise<SinkTarget> {
  const database = `sinks_${randomBytes(5).toString('hex')}`;
  const db = await mysql.createConnection({
    ...MYSQL_ADMIN,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  await db.query(`CREATE DATABASE \`${database}\``);
  const check = async (source: Digest): Promise<CheckResult> => {
    const sink = await mysqlDigest(db, database, tableName);
    return sameDigest(sink, source)
      ? { ok: true, detail: `${sink.rows.toLocaleString('en-US')} rows, checksum equal to the source's` }
      : { ok: false, detail: `sink ${JSON.stringify(sink)} against source ${JSON.stringify(source)}` };
  };
  return {
    kind: 'mysql',
    dsn: `mysql://root@127.0.0.1:3306/${database}`,
    properties: {},
    where: `database \`${database}\`, table \`${tableName}\``,
    checkSnapshot: check,
    markDrainStart: async () => {},
    drainedChanges: async () => {
      const [rows] = await db.query<RowDataPacket[]>(
        `SELECT id FROM \`${database}\`.\`${tableName}\` WHERE id IN (${shape.rows + 1}, ${shape.rows + shape.transactions})`,
      );
      return drainedFrom(
        rows.map((r) => Number(r.id)),
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

interface Envelope {
  id: string;
  op: string;
  key: { id: string | number } | null;
}

/**
 * The Redis database 0, with a stream key of this run's own (`bench:<random>:{schema}.{table}`).
 * Backlog changes visible: the stream's length (`XLEN`, one entry per change) beyond the
 * snapshot's entries.
 */
export async function redisTarget(shape: RunShape): Promise<SinkTarget> {
  const prefix = `bench:${randomBytes(5).toString('hex')}`;
  const stream = `${prefix}:${SNAPSHOT_TABLE}`;
  const redis = new Redis(REDIS_URL);
  let drainFrom = '0-0';
  return {
    kind: 'redis',
    dsn: REDIS_URL,
    properties: { stream: `${prefix}:{schema}.{table}` },
    where: `stream \`${stream}\``,
    checkSnapshot: async (source) => {
      // A snapshot row is one `read` entry: a duplicate would make the stream longer.
      const length = await redis.xlen(stream);
      return length === source.rows
        ? { ok: true, detail: `${length.toLocaleString('en-US')} entries, one per row` }
        : { ok: false, detail: `${length} entries for ${source.rows} rows` };
    },
    markDrainStart: async () => {
      const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
      drainFrom = last?.[0] ?? '0-0';
    },
    drainedChanges: async () => (await redis.xlen(stream)) - shape.rows,
    checkDrain: async () => {
      // Every entry after the snapshot's, read in pages: each change exactly once, in the order written.
      const ids = new Set<string>();
      const ops = { insert: 0, update: 0, other: 0 };
      let from = `(${drainFrom}`;
      let order = true;
      let lastInsert = shape.rows;
      for (;;) {
        const page = await redis.xrange(stream, from, '+', 'COUNT', 10_000);
        if (page.length === 0) break;
        for (const [entryId, fields] of page) {
          const event = JSON.parse(fields[1] as string) as Envelope;
          ids.add(event.id);
          if (event.op === 'insert') {
            ops.insert++;
            const id = Number(event.key?.id);
            if (id !== lastInsert + 1) order = false;
            lastInsert = id;
          } else if (event.op === 'update') ops.update++;
          else ops.other++;
          from = `(${entryId}`;
        }
      }
      const n = backlogChanges(shape);
      const ok =
        ids.size === n &&
        ops.insert === shape.transactions &&
        ops.update === shape.transactions &&
        ops.other === 0;
      return {
        ok: ok && order,
        detail:
          `${(ops.insert + ops.update + ops.other).toLocaleString('en-US')} entries after the snapshot's: ` +
          `${ops.insert.toLocaleString('en-US')} inserts, ${ops.update.toLocaleString('en-US')} updates` +
          `${ops.other ? `, ${ops.other} others` : ''}, ${ids.size.toLocaleString('en-US')} distinct ids` +
          `${order ? ', inserts in commit order' : ', inserts OUT of order'}`,
      };
    },
    cleanUp: async (pipelineId) => {
      try {
        const keys = [
          ...(await redis.keys(`${prefix}:*`)),
          ...(pipelineId ? await redis.keys(`replicator:${pipelineId}:*`) : []),
        ];
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        await redis.quit();
      }
    },
  };
}

/** The target of `kind`, made fresh for one run. */
export function sinkTarget(kind: SinkKind, sinkAdminUrl: string, shape: RunShape): Promise<SinkTarget> {
  if (kind === 'postgres') return postgresTarget(sinkAdminUrl, shape);
  if (kind === 'mysql') return mysqlTarget(shape);
  return redisTarget(shape);
}
