import { sqlOn } from '../test/support/replication-fixture.js';

/** The table both systems replicate, identical on every source and sink database. */
export const BENCH_TABLE = 'public.bench';
export const BENCH_TABLE_DDL = `CREATE TABLE ${BENCH_TABLE} (id bigint PRIMARY KEY, v text, n int)`;

/** One backlog to drain: the SQL that writes it on the source and the rows it leaves there. */
export interface Workload {
  label: string;
  rows: number;
  transactions: number;
  sql: string;
}

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

export function workloads(scale: number): Workload[] {
  const small = Math.max(1, Math.round(100_000 * scale));
  const big = Math.max(1, Math.round(1_000_000 * scale));
  return [
    {
      label: `${small.toLocaleString('en-US')} single-row transactions`,
      rows: small,
      transactions: small,
      // A COMMIT inside a DO block (PostgreSQL 11+) makes each row its own transaction in one round trip.
      sql: `DO $$ BEGIN FOR i IN 1..${small} LOOP INSERT INTO ${BENCH_TABLE} VALUES (${rowValues}); COMMIT; END LOOP; END $$`,
    },
    {
      label: `1 transaction of ${big.toLocaleString('en-US')} rows`,
      rows: big,
      transactions: 1,
      sql: `INSERT INTO ${BENCH_TABLE} SELECT ${rowValues} FROM generate_series(1, ${big}) AS i`,
    },
  ];
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
  await sqlOn(sourceUrl, workload.sql);
  await sqlOn(
    sourceUrl,
    "SET synchronous_commit = on; SELECT pg_logical_emit_message(true, 'bench', 'end of backlog')",
  );
  return (performance.now() - started) / 1000;
}
