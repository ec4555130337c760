import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sqlOn, tableDigest, waitFor } from '../test/support/replication-fixture.js';
import type { Replication } from './replication.js';
import { currentWalLsn, waitSlotConfirmed } from './source-slot.js';
import { BENCH_TABLE, eventsOf, type Workload, writeBacklog } from './workloads.js';

const POLL_MS = 50;

/** One timed drain of one backlog by one system. */
export interface DrainResult {
  system: string;
  workload: Workload;
  /** The source's major version. */
  sourceVersion: number;
  /** Time to write the backlog on the source (not part of the drain). */
  writeSeconds: number;
  /** Start-up: from resume to the first row of the backlog visible in the sink. */
  firstRowSeconds: number;
  /** From the first row visible to the whole backlog applied: `seconds - firstRowSeconds`. */
  drainSeconds: number;
  /** Total: from resume to the sink holding exactly the backlog's rows. */
  seconds: number;
  /** Change events of the backlog / total seconds. */
  eventsPerSecond: number;
  /** WAL from the slot's restart_lsn to the start of the backlog, which the resume reads as well. */
  walBeforeMiB: number;
  /** WAL from the slot's restart_lsn to the end of the backlog. */
  walMiB: number;
  /** Peak RSS of this process (which runs our service) so far, after this drain. */
  peakRssMiB: number;
}

/** The rows the drain counts: all of them, or those the backlog inserts above its base rows. */
const countedRows = (w: Workload) =>
  w.baseRows
    ? `SELECT count(*) AS n FROM ${BENCH_TABLE} WHERE id > ${w.baseRows}`
    : `SELECT count(*) AS n FROM ${BENCH_TABLE}`;

const count = async (client: pg.Client | string, sql: string) =>
  Number(
    (typeof client === 'string'
      ? await sqlOn<{ n: string }>(client, sql)
      : (await client.query<{ n: string }>(sql)).rows)[0]?.n,
  );

export async function serverVersion(url: string): Promise<number> {
  const [row] = await sqlOn<{ v: string }>(url, "SELECT current_setting('server_version_num') AS v");
  return Math.floor(Number(row?.v) / 10000);
}

/**
 * Empties the table on both sides through the replication itself (so the backlog holds nothing
 * but the workload) and writes the workload's base rows, lets the slot confirm that, then pauses.
 * Expects `r` paused.
 */
async function resetWhileRunning(r: Replication, workload: Workload, sourceVersion: number): Promise<void> {
  await r.resume();
  const base = workload.baseRows ?? 0;
  // At least twice: a confirmation moves restart_lsn only to the one candidate the slot holds,
  // which may lie in older WAL; a later round's candidate is this reset's own running-xacts record
  // (pg_log_standby_snapshot, PostgreSQL 16+; a checkpoint writes one too, before that), so the
  // next resume reads little but the backlog. Until it does: a slot left behind would make its
  // system read the WAL written since (another system's backlog, when it ran first) on resume, and
  // the comparison would depend on which system ran first.
  for (let round = 0; round < 2 || (round < MAX_RESET_ROUNDS && (await walToReadMiB(r)) > 1); round++) {
    await sqlOn(r.sourceUrl, sourceVersion >= 16 ? 'SELECT pg_log_standby_snapshot()' : 'CHECKPOINT');
    if (round === 0 || base === 0) {
      // One transaction: the sink goes from the previous drain's rows straight to the base rows.
      await sqlOn(r.sourceUrl, `TRUNCATE ${BENCH_TABLE}${workload.baseSql ? `; ${workload.baseSql}` : ''}`);
    } else {
      // A change to replicate and confirm that leaves the base rows as they are.
      await sqlOn(r.sourceUrl, `UPDATE ${BENCH_TABLE} SET n = n WHERE id = 1`);
    }
    // Taken right after the writes: a later position is only confirmed by idle feedback,
    // which ours sends up to 10 s later.
    const resetLsn = await currentWalLsn(r.sourceUrl);
    await waitFor(
      async () => (await count(r.sinkUrl, `SELECT count(*) AS n FROM ${BENCH_TABLE}`)) === base,
      `${r.name}: the sink table to hold the ${base} base rows`,
      240_000,
    );
    await waitSlotConfirmed(r.sourceUrl, r.slot, resetLsn);
  }
  await r.pause();
}

/** Rounds of the reset that try to bring restart_lsn up to the slot's confirmed position. */
const MAX_RESET_ROUNDS = 6;

/** WAL a resume must read from the slot's restart_lsn, in MiB. */
async function walToReadMiB(r: Replication): Promise<number> {
  const [row] = await sqlOn<{ bytes: string }>(
    r.sourceUrl,
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) AS bytes FROM pg_replication_slots WHERE slot_name = $1',
    [r.slot],
  );
  return Number(row?.bytes) / 2 ** 20;
}

/**
 * Writes `workload` on the source while `r` is paused, resumes it and times until the sink holds
 * exactly the workload's rows; then checks the sink equals the source and pauses `r` again.
 */
export async function drainBacklog(
  r: Replication,
  workload: Workload,
  timeoutMs: number,
  /** Called as the drain starts and as the sink holds every row (e.g. to sample CPU). */
  probe?: { resumed(): void; drained(): void },
): Promise<DrainResult> {
  const sourceVersion = await serverVersion(r.sourceUrl);
  await r.prepare?.();
  await resetWhileRunning(r, workload, sourceVersion);
  const walBeforeMiB = await walToReadMiB(r);
  const writeSeconds = await writeBacklog(r.sourceUrl, workload);
  const { rows } = await tableDigest(r.sourceUrl, BENCH_TABLE, 'id');
  if (rows !== workload.rows) throw new Error(`the workload left ${rows} rows, expected ${workload.rows}`);
  const target = workload.newRows ?? workload.rows;
  if ((await count(r.sourceUrl, countedRows(workload))) !== target)
    throw new Error(`the workload did not insert the ${target} rows expected`);
  const walMiB = await walToReadMiB(r);

  const sink = new pg.Client({ connectionString: r.sinkUrl });
  await sink.connect();
  let seconds: number;
  let firstRowSeconds: number | undefined;
  try {
    if ((await count(sink, countedRows(workload))) !== 0)
      throw new Error(`${r.name}: the sink holds backlog rows before the drain`);
    probe?.resumed();
    const started = performance.now();
    await r.resume();
    for (;;) {
      const n = await count(sink, countedRows(workload));
      const elapsed = (performance.now() - started) / 1000;
      if (n > 0) firstRowSeconds ??= elapsed;
      if (n === target) {
        probe?.drained();
        seconds = elapsed;
        break;
      }
      if (n > target) throw new Error(`${r.name}: the sink holds ${n} rows, more than the ${target} written`);
      if (elapsed * 1000 > timeoutMs) {
        throw new Error(
          `${r.name}: drain of ${workload.label} not done after ${elapsed.toFixed(0)} s (${n} rows)`,
        );
      }
      await sleep(POLL_MS);
    }
  } finally {
    await sink.end();
  }

  const [expected, actual] = await Promise.all([
    tableDigest(r.sourceUrl, BENCH_TABLE, 'id'),
    tableDigest(r.sinkUrl, BENCH_TABLE, 'id'),
  ]);
  if (expected.md5 !== actual.md5)
    throw new Error(`${r.name}: the sink differs from the source after the drain`);
  await r.pause();
  const first = firstRowSeconds ?? seconds;
  return {
    system: r.name,
    workload,
    sourceVersion,
    writeSeconds,
    firstRowSeconds: first,
    drainSeconds: seconds - first,
    seconds,
    eventsPerSecond: eventsOf(workload) / seconds,
    walBeforeMiB,
    walMiB,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}
