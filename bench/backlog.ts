import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { sqlOn, tableDigest, waitFor } from '../test/support/replication-fixture.js';
import type { Replication } from './replication.js';
import { currentWalLsn, waitSlotConfirmed } from './source-slot.js';
import { BENCH_TABLE, type Workload, writeBacklog } from './workloads.js';

const POLL_MS = 50;

/** One timed drain of one backlog by one system. */
export interface DrainResult {
  system: string;
  workload: Workload;
  /** Time to write the backlog on the source (not part of the drain). */
  writeSeconds: number;
  /** From resume to the first row visible in the sink: start-up and decoding before anything lands. */
  firstRowSeconds: number;
  /** From resume to the sink holding exactly the backlog's rows. */
  seconds: number;
  eventsPerSecond: number;
  /** WAL from the slot's restart_lsn to the start of the backlog, which the resume reads as well. */
  walBeforeMiB: number;
  /** WAL from the slot's restart_lsn to the end of the backlog. */
  walMiB: number;
  /** Peak RSS of this process (which runs our service) so far, after this drain. */
  peakRssMiB: number;
}

const countRows = async (client: pg.Client) =>
  Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${BENCH_TABLE}`)).rows[0]?.n);

/**
 * Empties the table on both sides through the replication itself (so the backlog holds nothing
 * but the workload), lets the slot confirm that, then pauses. Expects `r` paused.
 */
async function resetWhileRunning(r: Replication): Promise<void> {
  await r.resume();
  // Twice: a confirmation moves restart_lsn only to the one candidate the slot holds, which may
  // lie in older WAL; the second round's candidate is this reset's own running-xacts record
  // (pg_log_standby_snapshot, PostgreSQL 16+), so the next resume reads little but the backlog.
  for (let round = 0; round < 2; round++) {
    await sqlOn(r.sourceUrl, 'SELECT pg_log_standby_snapshot()');
    await sqlOn(r.sourceUrl, `TRUNCATE ${BENCH_TABLE}`);
    // Taken right after the truncate: a later position is only confirmed by idle feedback,
    // which ours sends up to 10 s later.
    const resetLsn = await currentWalLsn(r.sourceUrl);
    await waitFor(
      async () => Number((await sqlOn(r.sinkUrl, `SELECT count(*) AS n FROM ${BENCH_TABLE}`))[0]?.n) === 0,
      `${r.name}: the sink table to be emptied`,
    );
    await waitSlotConfirmed(r.sourceUrl, r.slot, resetLsn);
  }
  await r.pause();
}

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
): Promise<DrainResult> {
  await resetWhileRunning(r);
  const walBeforeMiB = await walToReadMiB(r);
  const writeSeconds = await writeBacklog(r.sourceUrl, workload);
  const { rows } = await tableDigest(r.sourceUrl, BENCH_TABLE, 'id');
  if (rows !== workload.rows) throw new Error(`the workload left ${rows} rows, expected ${workload.rows}`);
  const walMiB = await walToReadMiB(r);

  const sink = new pg.Client({ connectionString: r.sinkUrl });
  await sink.connect();
  let seconds: number;
  let firstRowSeconds: number | undefined;
  try {
    if ((await countRows(sink)) !== 0) throw new Error(`${r.name}: the sink is not empty before the drain`);
    const started = performance.now();
    await r.resume();
    for (;;) {
      const count = await countRows(sink);
      const elapsed = (performance.now() - started) / 1000;
      if (count > 0) firstRowSeconds ??= elapsed;
      if (count === rows) {
        seconds = elapsed;
        break;
      }
      if (count > rows)
        throw new Error(`${r.name}: the sink holds ${count} rows, more than the ${rows} written`);
      if (elapsed * 1000 > timeoutMs) {
        throw new Error(
          `${r.name}: drain of ${workload.label} not done after ${elapsed.toFixed(0)} s (${count} rows)`,
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
  return {
    system: r.name,
    workload,
    writeSeconds,
    firstRowSeconds: firstRowSeconds ?? seconds,
    seconds,
    eventsPerSecond: rows / seconds,
    walBeforeMiB,
    walMiB,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}
