import pg from 'pg';
import { sqlOn } from '../test/support/replication-fixture.js';

/** The table both systems replicate, identical on every source and sink database. */
export const BENCH_TABLE = 'public.bench';
export const BENCH_TABLE_DDL = `CREATE TABLE ${BENCH_TABLE} (id bigint PRIMARY KEY, v text, n int)`;

/** One backlog to drain: the SQL that writes it on the source and the rows it leaves there. */
export interface Workload {
  /** single-row transactions, concurrent clients' transactions, or one big transaction. */
  kind: 'single' | 'concurrent' | 'big';
  label: string;
  /** Rows the table holds once the backlog is written. */
  rows: number;
  transactions: number;
  /** The SQL that writes the backlog; with `write`, one transaction of it (for the report). */
  sql: string;
  /** Change events the backlog makes (inserts, updates and deletes); `rows` when absent. */
  events?: number;
  /**
   * Rows (ids 1 to baseRows) written while replicating, before the backlog: what its updates and
   * deletes work on. The backlog then inserts exactly `newRows` rows above them and deletes none of
   * those, so the sink holds them all exactly when the whole backlog has been applied.
   */
  baseRows?: number;
  newRows?: number;
  /** SQL that writes the base rows. */
  baseSql?: string;
  /** Writes the backlog from several clients, instead of running `sql` once. */
  write?: (sourceUrl: string) => Promise<void>;
}

/** Change events of a workload's backlog. */
export const eventsOf = (w: Workload) => w.events ?? w.rows;

/** `BENCH_SCALE` (default 1) multiplies every row count; `0.1` is a quick smoke run. */
export function benchScale(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.BENCH_SCALE ?? '1';
  const scale = Number(text);
  if (!Number.isFinite(scale) || scale <= 0 || scale > 10) {
    throw new Error(`BENCH_SCALE must be a number in (0, 10], got '${text}'`);
  }
  return scale;
}

/** `BENCH_RUNS` (default 3): how often each drain is repeated; the summary takes the median. */
export function benchRuns(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.BENCH_RUNS ?? '3';
  const runs = Number(text);
  if (!Number.isInteger(runs) || runs < 1 || runs > 20) {
    throw new Error(`BENCH_RUNS must be an integer from 1 to 20, got '${text}'`);
  }
  return runs;
}

const rowValues = "i, 'row ' || i, i % 1000";

/** Single-row transactions written by one `DO` block. */
export function singleRowWorkload(rows: number): Workload {
  return {
    kind: 'single',
    label: `${rows.toLocaleString('en-US')} single-row transactions`,
    rows,
    transactions: rows,
    // A COMMIT inside a DO block (PostgreSQL 11+) makes each row its own transaction in one round trip.
    sql: `DO $$ BEGIN FOR i IN 1..${rows} LOOP INSERT INTO ${BENCH_TABLE} VALUES (${rowValues}); COMMIT; END LOOP; END $$`,
  };
}

/** One transaction inserting `rows` rows. */
export function bigTransactionWorkload(rows: number): Workload {
  return {
    kind: 'big',
    label: `1 transaction of ${rows.toLocaleString('en-US')} rows`,
    rows,
    transactions: 1,
    sql: `INSERT INTO ${BENCH_TABLE} SELECT ${rowValues} FROM generate_series(1, ${rows}) AS i`,
  };
}

/** The backlogs of the decode benchmark: single-row transactions and one big transaction. */
export function workloads(scale: number): Workload[] {
  const small = Math.max(1, Math.round(100_000 * scale));
  const big = Math.max(1, Math.round(1_000_000 * scale));
  return [singleRowWorkload(small), bigTransactionWorkload(big)];
}

/** Clients of the concurrent workload. */
export const CONCURRENT_CLIENTS = 8;
/** Rows the concurrent workload's updates pick from (pgbench's accounts, in a way). */
const UPDATED_ROWS = 10_000;

/**
 * pgbench-like: `clients` sessions at once, each running its share of `transactions`
 * transactions of several statements: an `UPDATE` of a random row among the first 10,000 (rows
 * that clients update concurrently, as pgbench's accounts), an `INSERT` of a new row (its history),
 * and every other transaction a `DELETE` of a row of its own. The rows updated and deleted are
 * written before the backlog (`baseRows`); each transaction inserts exactly one row above them and
 * no transaction deletes such a row, so the sink has all `transactions` of them exactly when every
 * transaction has been applied. The random choices come from a fixed seed: every run and every
 * system gets the same statements.
 */
export function concurrentWorkload(transactions: number, clients = CONCURRENT_CLIENTS): Workload {
  const deletes = Math.ceil(transactions / 2);
  const updated = Math.min(UPDATED_ROWS, Math.max(10, transactions));
  const baseRows = updated + deletes;
  const statements = (k: number, random: () => number) => {
    const target = 1 + Math.floor(random() * updated);
    return [
      'BEGIN',
      `UPDATE ${BENCH_TABLE} SET n = n + 1 WHERE id = ${target}`,
      `INSERT INTO ${BENCH_TABLE} VALUES (${baseRows + k + 1}, 'txn ${k}', ${k % 1000})`,
      // Even transactions delete one row of the delete range each: a row no other transaction touches.
      ...(k % 2 === 0 ? [`DELETE FROM ${BENCH_TABLE} WHERE id = ${updated + k / 2 + 1}`] : []),
      'COMMIT',
    ].join('; ');
  };
  return {
    kind: 'concurrent',
    label: `${transactions.toLocaleString('en-US')} pgbench-like transactions from ${clients} clients`,
    rows: updated + transactions,
    transactions,
    events: 2 * transactions + deletes,
    baseRows,
    newRows: transactions,
    baseSql: `INSERT INTO ${BENCH_TABLE} SELECT ${rowValues} FROM generate_series(1, ${baseRows}) AS i`,
    sql:
      `BEGIN; UPDATE ${BENCH_TABLE} SET n = n + 1 WHERE id = <random, 1 to ${updated}>; ` +
      `INSERT INTO ${BENCH_TABLE} VALUES (<new id>, 'txn <k>', <k % 1000>); ` +
      `DELETE FROM ${BENCH_TABLE} WHERE id = <a row of its own> (every other transaction); COMMIT`,
    write: (sourceUrl) => writeConcurrently(sourceUrl, transactions, clients, statements),
  };
}

/** mulberry32: a small seeded generator, so that the workload is the same at every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs `transactions` transactions from `clients` connections at once, each transaction one round
 * trip (its statements in one simple query); client c runs transactions c, c + clients, ...
 */
async function writeConcurrently(
  sourceUrl: string,
  transactions: number,
  clients: number,
  statements: (k: number, random: () => number) => string,
): Promise<void> {
  const sessions = await Promise.all(
    Array.from({ length: clients }, async () => {
      const client = new pg.Client({ connectionString: sourceUrl });
      await client.connect();
      return client;
    }),
  );
  try {
    await Promise.all(
      sessions.map(async (client, c) => {
        const random = seeded(c + 1);
        for (let k = c; k < transactions; k += clients) await client.query(statements(k, random));
      }),
    );
  } finally {
    await Promise.all(sessions.map((client) => client.end()));
  }
}

/**
 * The backlogs of the drain benchmark: the decode's two and the concurrent clients' transactions;
 * `BENCH_WORKLOADS` (`single`, `concurrent`, `big`, comma-separated) keeps only those named.
 */
export function drainWorkloads(scale: number, env: NodeJS.ProcessEnv = process.env): Workload[] {
  const [small, big] = workloads(scale) as [Workload, Workload];
  const concurrent = concurrentWorkload(Math.max(2, Math.round(100_000 * scale)));
  const all = [small, concurrent, big];
  const wanted = env.BENCH_WORKLOADS?.split(',').map((s) => s.trim());
  if (!wanted) return all;
  const unknown = wanted.filter((kind) => !all.some((w) => w.kind === kind));
  if (unknown.length > 0)
    throw new Error(`BENCH_WORKLOADS: ${unknown.join(', ')} not among ${all.map((w) => w.kind).join(', ')}`);
  return all.filter((w) => wanted.includes(w.kind));
}

/**
 * Writes `workload` on the source, then one synchronous commit: the workload commits
 * asynchronously, and that commit flushes all of its WAL, so that no reader waits for the WAL
 * writer (walsenders only send flushed WAL). Returns the seconds it took.
 *
 * The commit must write WAL of its own to be flushed (a transaction that only took an xid commits
 * asynchronously whatever `synchronous_commit` says): a transactional logical decoding message,
 * which pgoutput does not send unless asked (`messages`), and which leaves `pg_current_wal_lsn()`
 * at the end of this commit record.
 */
export async function writeBacklog(sourceUrl: string, workload: Workload): Promise<number> {
  const started = performance.now();
  if (workload.write) await workload.write(sourceUrl);
  else await sqlOn(sourceUrl, workload.sql);
  await sqlOn(
    sourceUrl,
    "SET synchronous_commit = on; SELECT pg_logical_emit_message(true, 'bench', 'end of backlog')",
  );
  return (performance.now() - started) / 1000;
}
