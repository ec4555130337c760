import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  availableBinDirs,
  createDatabase,
  type PgCluster,
  startPgCluster,
} from '../test/support/pg-cluster.js';
import { sqlOn, waitFor } from '../test/support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../test/support/service.js';
import { writeSection } from './benchmarks-section.js';
import { rate as fmtRate, table } from './report-format.js';
import { call } from './service-api.js';

/**
 * Live load with the source at PostgreSQL's default `synchronous_commit = on`: single-row
 * transactions at fixed rates from several clients, ours and the native subscription one after
 * the other on fresh tables, each row stamped with `clock_timestamp()` at the source and again by a
 * default column at the sink. Prints the rate each kept up with and the end-to-end lag, then how
 * fast each drains a backlog of the same rows, to set beside how fast a backlog built under load
 * drains once the load stops.
 *
 * `npm run bench:live`. LIVE_RATES (default 1000,2000,5000,7500,10000,15000,20000): the rates, in
 * order; the run stops after the first rate native does not keep up with or the clients cannot
 * offer (LIVE_UNTIL=all runs every rate), then runs half of native's highest rate if it is not
 * among them (LIVE_HALF=off skips it). LIVE_SECONDS (default 60), LIVE_CLIENTS (default 8),
 * LIVE_SYSTEMS (default native,ours), LIVE_FSYNC (default off: fsync costs what the disk costs,
 * which says nothing of either system; `on` for the full defaults), LIVE_KEEPUP_SECONDS (default 1:
 * a system keeps up when the sink has every row within that long after the last insert),
 * LIVE_BACKLOG_ROWS (default 100000; 0 skips the backlog drain).
 */

const RATES = (process.env.LIVE_RATES ?? '1000,2000,5000,7500,10000,15000,20000').split(',').map(Number);
const SECONDS = Number(process.env.LIVE_SECONDS ?? '60');
const CLIENTS = Number(process.env.LIVE_CLIENTS ?? '8');
const FSYNC = process.env.LIVE_FSYNC === 'on';
// LIVE_SYSTEMS=ours runs ours alone (e.g. under a profiler).
const SYSTEMS = (process.env.LIVE_SYSTEMS ?? 'native,ours').split(',') as System[];
const UNTIL_NATIVE_BEHIND = process.env.LIVE_UNTIL !== 'all';
const HALF = process.env.LIVE_HALF !== 'off';
const KEEPUP_SECONDS = Number(process.env.LIVE_KEEPUP_SECONDS ?? '1');
const BACKLOG_ROWS = Number(process.env.LIVE_BACKLOG_ROWS ?? '100000');
/** The clients offered the rate when they reached this share of it. */
const OFFERED_SHARE = 0.97;

for (const [name, value] of Object.entries({ SECONDS, CLIENTS, KEEPUP_SECONDS, BACKLOG_ROWS })) {
  if (!Number.isFinite(value) || value < 0) throw new Error(`LIVE_${name}: not a number`);
}
if (RATES.some((r) => !Number.isFinite(r) || r <= 0))
  throw new Error('LIVE_RATES: positive numbers, comma-separated');

type System = 'native' | 'ours';
const run = promisify(execFile);

const SOURCE_DDL = (t: string) =>
  `CREATE TABLE ${t} (id bigint PRIMARY KEY, v text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())`;
const SEEN = 'seen_at timestamptz DEFAULT clock_timestamp()';

interface Lag {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** One system at one rate. */
interface Result {
  system: System;
  rate: number;
  offered: number;
  sustained: number;
  /** Whether every row was visible within LIVE_KEEPUP_SECONDS of the last insert. */
  keepsUp: boolean;
  /** Rows not yet visible in the sink when the last row was inserted. */
  behindRows: number;
  /** From the last insert to the last row visible. */
  caughtUpSeconds: number;
  /** behindRows / caughtUpSeconds, when it fell behind. */
  catchUpRate?: number;
  lagMs: Lag;
}

/** A backlog of the same rows written while the system is paused, then drained. */
interface BacklogDrain {
  system: System;
  rows: number;
  startupSeconds: number;
  /** First row visible to last row visible. */
  drainSeconds: number;
  rate: number;
}

/** A system set up on fresh databases, streaming `table`, the sink table with its `seen_at` stamp. */
interface Setup {
  src: string;
  dst: string;
  table: string;
  pause(): Promise<void>;
  resume(): Promise<void>;
  failed(): Promise<string | undefined>;
  teardown(): Promise<void>;
}

/** Inserts single-row transactions at `rate` per second (or `max`, `rows` of them), from a process of its own. */
async function drive(url: string, table: string, rate: number | 'max', seconds: number, rows?: number) {
  const { stdout } = await run(process.execPath, [
    ...process.execArgv,
    join(dirname(fileURLToPath(import.meta.url)), 'live-load-driver.ts'),
    url,
    table,
    String(rate),
    String(seconds),
    String(CLIENTS),
    ...(rows === undefined ? [] : [String(rows)]),
  ]);
  return JSON.parse(stdout.trim().split('\n').at(-1) as string).offered as number;
}

async function waitAllRows(s: Setup, total: number, what: string) {
  let polls = 0;
  await waitFor(
    async () => {
      if (++polls % 25 === 0) {
        const error = await s.failed();
        if (error) throw new Error(`${what}: ${error}`);
      }
      return (await sqlOn(s.dst, `SELECT count(*)::int AS n FROM ${s.table}`))[0].n >= total;
    },
    what,
    15 * 60_000,
  );
}

/**
 * Figures of the rows in the sink. A row is visible when its sink transaction commits: the sink
 * records that time (`track_commit_timestamp`), except for the subscription's apply worker, which
 * records the source's commit time instead (its replication origin's); its transactions commit
 * right after the last row they write, so for them the latest `seen_at` among the rows of the
 * transaction (those sharing its `xmin`) is the time. The greater of the two is the visible time.
 */
async function stamps(dst: string, table: string) {
  const [row] = await sqlOn(
    dst,
    `WITH v AS (
       SELECT created_at,
              greatest(pg_xact_commit_timestamp(xmin), max(seen_at) OVER (PARTITION BY xmin::text)) AS visible_at
         FROM ${table}
     ), e AS (SELECT max(created_at) AS load_end FROM v)
     SELECT count(*)::int AS n,
            percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY extract(epoch FROM visible_at - created_at) * 1000) AS p,
            max(extract(epoch FROM visible_at - created_at) * 1000) AS max,
            extract(epoch FROM min(created_at)) AS first_created,
            extract(epoch FROM max(created_at)) AS last_created,
            extract(epoch FROM min(visible_at)) AS first_visible,
            extract(epoch FROM max(visible_at)) AS last_visible,
            count(*) FILTER (WHERE visible_at > e.load_end)::int AS behind
       FROM v, e GROUP BY e.load_end`,
  );
  const [p50, p95, p99] = (row.p as number[]).map((v) => Math.round(v * 10) / 10);
  return {
    n: row.n as number,
    lag: { p50: p50 ?? 0, p95: p95 ?? 0, p99: p99 ?? 0, max: Math.round(Number(row.max)) },
    firstCreated: Number(row.first_created),
    lastCreated: Number(row.last_created),
    firstVisible: Number(row.first_visible),
    lastVisible: Number(row.last_visible),
    behind: row.behind as number,
  };
}

async function measure(system: System, s: Setup, rate: number): Promise<Result> {
  const offered = await drive(s.src, s.table, rate, SECONDS);
  const total = Math.round(rate * SECONDS);
  await waitAllRows(s, total, `${system} to catch up at ${rate}/s`);
  const st = await stamps(s.dst, s.table);
  const caughtUpSeconds = Math.max(0, st.lastVisible - st.lastCreated);
  const fellBehind = caughtUpSeconds > KEEPUP_SECONDS;
  return {
    system,
    rate,
    offered: Math.round(offered),
    sustained: Math.round(st.n / (st.lastVisible - st.firstCreated)),
    keepsUp: !fellBehind,
    behindRows: st.behind,
    caughtUpSeconds: Math.round(caughtUpSeconds * 100) / 100,
    ...(fellBehind && st.behind > 0 ? { catchUpRate: st.behind / caughtUpSeconds } : {}),
    lagMs: st.lag,
  };
}

async function drainBacklog(system: System, s: Setup, rows: number): Promise<BacklogDrain> {
  await s.pause();
  await drive(s.src, s.table, 'max', 0, rows);
  const resumedAt = Date.now() / 1000;
  await s.resume();
  await waitAllRows(s, rows, `${system} to drain ${rows} rows`);
  const st = await stamps(s.dst, s.table);
  const drainSeconds = st.lastVisible - st.firstVisible;
  return {
    system,
    rows,
    startupSeconds: st.firstVisible - resumedAt,
    drainSeconds,
    rate: rows / drainSeconds,
  };
}

async function oursSetup(
  service: TestService,
  source: PgCluster,
  sink: PgCluster,
  table: string,
): Promise<Setup> {
  const [src, dst] = await Promise.all([
    createDatabase(source.adminUrl, table),
    createDatabase(sink.adminUrl, table),
  ]);
  await sqlOn(src, SOURCE_DDL(table));
  await call(service, 'POST', '/v1/connections', { name: `${table}-src`, type: 'postgres', dsn: src });
  await call(service, 'POST', '/v1/connections', { name: `${table}-dst`, type: 'postgres', dsn: dst });
  const name = table.replaceAll('_', '-');
  await call(service, 'POST', '/v1/pipelines', {
    name,
    source: { connection: `${table}-src`, tables: [`public.${table}`] },
    sink: { connection: `${table}-dst` },
  });
  await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
  await waitFor(
    async () => (await call(service, 'GET', `/v1/pipelines/${name}/progress`)).phase === 'streaming',
    'our pipeline to stream',
  );
  await sqlOn(dst, `ALTER TABLE ${table} ADD COLUMN ${SEEN}`);
  const slotInactive = () =>
    waitFor(
      async () =>
        (
          await sqlOn(
            src,
            'SELECT count(*)::int AS n FROM pg_replication_slots WHERE active AND database = current_database()',
          )
        )[0].n === 0,
      'our slot to be released',
    );
  return {
    src,
    dst,
    table,
    pause: async () => {
      await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'pause' });
      await slotInactive();
    },
    resume: async () => {
      await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'resume' });
    },
    failed: async () => {
      const p = await call(service, 'GET', `/v1/pipelines/${name}`);
      return p.state === 'failed' ? `pipeline failed: ${p.error}` : undefined;
    },
    teardown: async () => {
      await call(service, 'DELETE', `/v1/pipelines/${name}`);
      await dropDatabases(source, sink, table);
    },
  };
}

async function nativeSetup(source: PgCluster, sink: PgCluster, table: string): Promise<Setup> {
  const [src, dst] = await Promise.all([
    createDatabase(source.adminUrl, table),
    createDatabase(sink.adminUrl, table),
  ]);
  await sqlOn(src, `${SOURCE_DDL(table)}; CREATE PUBLICATION ${table} FOR TABLE ${table}`);
  await sqlOn(dst, `${SOURCE_DDL(table)}; ALTER TABLE ${table} ADD COLUMN ${SEEN}`);
  await sqlOn(dst, `CREATE SUBSCRIPTION ${table} CONNECTION ${pg.escapeLiteral(src)} PUBLICATION ${table}`);
  await waitFor(
    async () =>
      (
        await sqlOn(
          dst,
          `SELECT count(*)::int AS n FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
            WHERE s.subname = $1 AND r.srsubstate = 'r'`,
          [table],
        )
      )[0].n === 1,
    'the subscription to be ready',
  );
  return {
    src,
    dst,
    table,
    pause: async () => {
      await sqlOn(dst, `ALTER SUBSCRIPTION ${table} DISABLE`);
      await waitFor(
        async () =>
          (
            await sqlOn(
              src,
              'SELECT count(*)::int AS n FROM pg_replication_slots WHERE active AND database = current_database()',
            )
          )[0].n === 0,
        'the subscription slot to be released',
      );
    },
    resume: async () => {
      await sqlOn(dst, `ALTER SUBSCRIPTION ${table} ENABLE`);
    },
    failed: async () => undefined,
    teardown: async () => {
      await sqlOn(dst, `DROP SUBSCRIPTION ${table}`);
      await dropDatabases(source, sink, table);
    },
  };
}

async function dropDatabases(source: PgCluster, sink: PgCluster, name: string) {
  // The databases hold up to a minute of rows each: dropped once measured, to spare the disk.
  await Promise.all([
    sqlOn(source.adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
    sqlOn(sink.adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  ]);
}

const setUp = (system: System, service: TestService, source: PgCluster, sink: PgCluster, table: string) =>
  system === 'ours' ? oursSetup(service, source, sink, table) : nativeSetup(source, sink, table);

async function once<T>(
  system: System,
  service: TestService,
  source: PgCluster,
  sink: PgCluster,
  table: string,
  body: (s: Setup) => Promise<T>,
): Promise<T> {
  const s = await setUp(system, service, source, sink, table);
  try {
    return await body(s);
  } finally {
    await s.teardown();
  }
}

const lagCells = (r: Result) => [r.lagMs.p50, r.lagMs.p95, r.lagMs.p99, r.lagMs.max].map(String);

function resultsTable(results: Result[]): string {
  return table(
    [
      'rate/s',
      'system',
      'offered/s',
      'sustained/s',
      'keeps up',
      'behind at load end (rows)',
      'caught up after load (s)',
      'catch-up rows/s',
      'lag p50 ms',
      'p95',
      'p99',
      'max',
    ],
    [...results]
      .sort((a, b) => a.rate - b.rate)
      .map((r) => [
        String(r.rate),
        r.system,
        String(r.offered),
        String(r.sustained),
        r.keepsUp ? 'yes' : 'no',
        r.behindRows.toLocaleString('en-US'),
        String(r.caughtUpSeconds),
        r.catchUpRate === undefined ? '' : fmtRate(r.catchUpRate),
        ...lagCells(r),
      ]),
  );
}

/** The highest rate native kept up with, its clients having offered it. */
const nativeMax = (results: Result[]) =>
  Math.max(
    0,
    ...results
      .filter((r) => r.system === 'native' && r.keepsUp && r.offered >= r.rate * OFFERED_SHARE)
      .map((r) => r.rate),
  );

function targets(results: Result[], drains: BacklogDrain[]): string[] {
  const lines: string[] = [];
  const max = nativeMax(results);
  const kept = results.filter((r) => r.system === 'native' && r.keepsUp).map((r) => r.rate);
  if (kept.length > 0 && SYSTEMS.includes('ours')) {
    const ours = (rate: number) => results.find((r) => r.system === 'ours' && r.rate === rate);
    const missed = kept.filter((rate) => !ours(rate)?.keepsUp);
    const oursMax = Math.max(
      0,
      ...results.filter((r) => r.system === 'ours' && r.keepsUp).map((r) => r.rate),
    );
    lines.push(
      `Ours keeps up with every rate native keeps up with (${kept.join(', ')}/s): **${missed.length === 0 ? 'met' : 'not met'}**` +
        `${missed.length ? ` (not at ${missed.join(', ')}/s)` : ''}; ours' highest rate kept up with / native's: ${oursMax} / ${max} = ${(max ? oursMax / max : 0).toFixed(2)}.`,
    );
  }
  // The hot path's own goal: at 5,000 transactions a second, a lag of native's order.
  const at5000 = results.find((r) => r.system === 'ours' && r.rate === 5000);
  if (at5000) {
    const { p50, p99 } = at5000.lagMs;
    lines.push(
      `At 5000/s: ours' lag p50 at most 2 ms: **${p50 <= 2 ? 'met' : 'not met'}** (${p50} ms); ` +
        `p99 at most 10 ms: **${p99 <= 10 ? 'met' : 'not met'}** (${p99} ms).`,
    );
  }
  const half = max / 2;
  const atHalf = results.find((r) => r.system === 'ours' && r.rate === half);
  if (atHalf) {
    const p50 = atHalf.lagMs.p50;
    const p99 = atHalf.lagMs.p99;
    lines.push(
      `At half native's maximum (${half}/s): ours' lag p50 at most 20 ms: **${p50 <= 20 ? 'met' : 'not met'}** (${p50} ms, ${(p50 / 20).toFixed(2)} of it); ` +
        `p99 at most 100 ms: **${p99 <= 100 ? 'met' : 'not met'}** (${p99} ms, ${(p99 / 100).toFixed(2)} of it).`,
    );
  } else if (max > 0) {
    lines.push(`At half native's maximum (${half}/s): not measured (LIVE_HALF=off or ours not run).`);
  } else {
    lines.push('Native kept up with none of the rates: no maximum, no half of it.');
  }
  const behind = results.filter((x) => x.catchUpRate !== undefined);
  if (behind.length === 0)
    lines.push('Backlog under live load: no system fell behind at the rates run, so no backlog built up.');
  for (const r of behind) {
    const drain = drains.find((d) => d.system === r.system);
    if (!drain || r.catchUpRate === undefined) continue;
    const ratio = r.catchUpRate / drain.rate;
    lines.push(
      `Backlog under live load, ${r.system} at ${r.rate}/s: ${r.behindRows.toLocaleString('en-US')} rows behind when the load stopped, ` +
        `drained at ${fmtRate(r.catchUpRate)} rows/s, ${ratio.toFixed(2)} of its backlog-drain rate (${fmtRate(drain.rate)} rows/s) ` +
        `against ${(r.rate / drain.rate).toFixed(2)} for the live rate: ` +
        `**${ratio >= 0.8 ? 'drains at the backlog-drain rate' : 'slower than the backlog-drain rate'}** (at least 0.8 of it counts as the drain rate).`,
    );
  }
  return lines;
}

function liveLoadMarkdown(results: Result[], drains: BacklogDrain[], postgres: string, date: Date): string {
  const drainTable = table(
    ['system', 'rows', 'start-up s', 'first to last row s', 'drain rows/s'],
    drains.map((d) => [
      d.system,
      d.rows.toLocaleString('en-US'),
      d.startupSeconds.toFixed(2),
      d.drainSeconds.toFixed(2),
      fmtRate(d.rate),
    ]),
  );
  return [
    '## Live load',
    '',
    'Single-row transactions at fixed rates from several clients (a process of their own), with the',
    "source at PostgreSQL's default `synchronous_commit = on`; ours (the pipeline, through the REST",
    'API, default sink properties) and the native subscription (default options) one after the other,',
    'each on fresh databases.',
    '',
    `- Date: ${date.toISOString()}; ${postgres} (source and sink); Node.js ${process.version}`,
    `- ${CLIENTS} clients, ${SECONDS} s per rate, source fsync=${FSYNC ? 'on' : 'off'} (\`LIVE_FSYNC=on\` for the full defaults)`,
    '',
    '```sh',
    `npm run bench:live   # LIVE_RATES=${RATES.join(',')} LIVE_SECONDS=${SECONDS} LIVE_CLIENTS=${CLIENTS}`,
    '```',
    '',
    '### Method',
    '',
    "Each row carries `created_at`, the source's `clock_timestamp()` at its insert (its commit follows",
    'at once, after the WAL flush `synchronous_commit = on` waits for), and gets `seen_at`, the',
    "sink's `clock_timestamp()` as a column default, when it is written there (both clusters share",
    "the machine's clock). A row becomes visible when its sink transaction commits: its **visible",
    "time** is that transaction's commit timestamp (the sink runs with `track_commit_timestamp = on`;",
    'ours writes a batch of source transactions in one sink transaction, some rows under a',
    "savepoint). The subscription's apply worker records the source's commit time there instead",
    '(that of its replication origin); it applies each source transaction in one of its own and',
    'commits right after its last row, so for it the visible time is the latest `seen_at` among the',
    'rows of its sink transaction (sharing its `xmin`): the greater of the two. **Lag** is visible time minus',
    '`created_at`, per row: p50, p95, p99 and max over every row of the run. **sustained/s** is the',
    'rows over the time from the first insert to the last row visible. A system **keeps up** when',
    `the last row is visible within ${KEEPUP_SECONDS} s of the last insert ("caught up after load"); "behind at`,
    'load end" is the rows not yet visible when the last row was inserted, and when a system fell',
    'behind, "catch-up rows/s" is those rows over the time it then took to show them: how fast a',
    'backlog built under live load drains once the load stops.',
    '',
    `The rates run in order (${RATES.join(', ')}/s)${UNTIL_NATIVE_BEHIND ? ', stopping after the first one native does not keep up with or the clients cannot offer (less than 97% of it)' : ''};`,
    `native's maximum is the highest rate it kept up with${HALF ? ', and half of it runs too when it is not among the rates' : ''}.`,
    `**Backlog drain**: on fresh databases, with the system paused, ${BACKLOG_ROWS.toLocaleString('en-US')} of the same rows are`,
    'inserted by the same clients as fast as they go, then the system resumes; start-up is the',
    'resume to the first row visible, the drain rate the rows over the first to the last row visible.',
    '',
    '### Results',
    '',
    resultsTable(results),
    '',
    ...(drains.length ? [drainTable, ''] : []),
    ...targets(results, drains).map((t) => `- ${t}`),
  ].join('\n');
}

async function versionOf(binDir: string): Promise<string> {
  const { stdout } = await run(join(binDir, 'postgres'), ['--version']);
  return stdout.trim();
}

const line = (r: Result) =>
  `${r.rate}/s ${r.system}: offered ${r.offered}, sustained ${r.sustained}, ${r.keepsUp ? 'kept up' : 'fell behind'}, ` +
  `caught up ${r.caughtUpSeconds} s after the load (${r.behindRows} rows behind), lag p50/p95/p99/max ${lagCells(r).join('/')} ms`;

async function main(): Promise<void> {
  const date = new Date();
  const { binDir } = availableBinDirs()[0] as { binDir: string };
  const defaults = ['synchronous_commit=on', ...(FSYNC ? ['fsync=on', 'full_page_writes=on'] : [])];
  const source = await startPgCluster('live-source', binDir, defaults);
  // The sink records when each transaction commits: the moment its rows become visible.
  const sink = await startPgCluster('live-sink', binDir, ['track_commit_timestamp=on']);
  const service = await startTestService({
    ...testConfig(await createDatabase(sink.adminUrl, 'live_store')),
    log: { level: 'warn', format: 'json' },
  });
  const results: Result[] = [];
  const drains: BacklogDrain[] = [];
  const atRate = async (rate: number) => {
    for (const system of SYSTEMS) {
      const label = String(rate).replace('.', '_');
      const result = await once(system, service, source, sink, `live_${system}_${label}`, (s) =>
        measure(system, s, rate),
      );
      results.push(result);
      console.log(line(result));
    }
  };
  try {
    for (const rate of RATES) {
      await atRate(rate);
      const native = results.find((r) => r.system === 'native' && r.rate === rate);
      const offeredShort = results.some((r) => r.rate === rate && r.offered < rate * OFFERED_SHARE);
      if (UNTIL_NATIVE_BEHIND && (offeredShort || (native && !native.keepsUp))) {
        console.log(
          `stopping after ${rate}/s: ${offeredShort ? 'the clients could not offer it' : 'native fell behind'}`,
        );
        break;
      }
    }
    const half = nativeMax(results) / 2;
    if (HALF && half > 0 && !results.some((r) => r.rate === half)) await atRate(half);
    if (BACKLOG_ROWS > 0) {
      for (const system of SYSTEMS) {
        const drain = await once(system, service, source, sink, `live_${system}_backlog`, (s) =>
          drainBacklog(system, s, BACKLOG_ROWS),
        );
        drains.push(drain);
        console.log(
          `backlog ${system}: ${drain.rows} rows, start-up ${drain.startupSeconds.toFixed(2)} s, ${fmtRate(drain.rate)} rows/s`,
        );
      }
    }
  } finally {
    await service.stop();
    await Promise.all([source.stop(), sink.stop()]);
  }
  const markdown = liveLoadMarkdown(results, drains, await versionOf(binDir), date);
  console.log(`\n${markdown}`);
  // Only a side-by-side run is a result to keep.
  if (SYSTEMS.includes('native') && SYSTEMS.includes('ours'))
    writeSection('BENCHMARKS.md', 'live-load', markdown);
}

main().catch(async (error) => {
  console.error(error);
  await sleep(0);
  process.exit(1);
});
