import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
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
import { call } from './service-api.js';

/**
 * Live load with the source at PostgreSQL's default `synchronous_commit = on`: single-row
 * transactions at a fixed rate from several clients, ours and the native subscription one after
 * the other on fresh tables, each row stamped with `clock_timestamp()` at the source and again by
 * a default column at the sink. Prints the rate each kept up with and the end-to-end lag.
 *
 * `npm run bench:live`; LIVE_RATES (default 1000,2000,5000), LIVE_SECONDS (default 20),
 * LIVE_CLIENTS (default 8), LIVE_SYSTEMS (default native,ours), LIVE_FSYNC (default off: fsync costs what the disk costs, which says
 * nothing of either system; `on` for the full defaults).
 */

const RATES = (process.env.LIVE_RATES ?? '1000,2000,5000').split(',').map(Number);
const SECONDS = Number(process.env.LIVE_SECONDS ?? '20');
const CLIENTS = Number(process.env.LIVE_CLIENTS ?? '8');
const FSYNC = process.env.LIVE_FSYNC === 'on';
// LIVE_SYSTEMS=ours runs ours alone (e.g. under a profiler).
const SYSTEMS = (process.env.LIVE_SYSTEMS ?? 'native,ours').split(',');

const run = promisify(execFile);

const SOURCE_DDL = (t: string) =>
  `CREATE TABLE ${t} (id bigint PRIMARY KEY, v text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())`;
const SEEN = 'seen_at timestamptz DEFAULT clock_timestamp()';

interface Result {
  system: string;
  rate: number;
  offered: number;
  sustained: number;
  caughtUpSeconds: number;
  lagMs: { p50: number; p95: number; p99: number; max: number };
}

/** Inserts single-row transactions at `rate` per second for `seconds`, from a process of its own. */
async function drive(url: string, table: string, rate: number, seconds: number): Promise<number> {
  const { stdout } = await run(process.execPath, [
    ...process.execArgv,
    join(dirname(fileURLToPath(import.meta.url)), 'live-load-driver.ts'),
    url,
    table,
    String(rate),
    String(seconds),
    String(CLIENTS),
  ]);
  return JSON.parse(stdout.trim().split('\n').at(-1) as string).offered;
}

async function measure(
  system: string,
  sourceUrl: string,
  sinkUrl: string,
  table: string,
  rate: number,
): Promise<Result> {
  const offered = await drive(sourceUrl, table, rate, SECONDS);
  const loadEnded = Date.now();
  const total = Math.round(rate * SECONDS);
  await waitFor(
    async () => (await sqlOn(sinkUrl, `SELECT count(*)::int AS n FROM ${table}`))[0].n >= total,
    `${system} to catch up at ${rate}/s`,
    10 * 60_000,
  );
  const caughtUpSeconds = (Date.now() - loadEnded) / 1000;
  // The source's stamps, copied with the rows, against the sink's own.
  const [lag] = await sqlOn(
    sinkUrl,
    `SELECT percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ms) AS p, max(ms) AS max,
            count(*) / extract(epoch FROM max(seen_at) - min(created_at)) AS sustained
       FROM (SELECT seen_at, created_at, extract(epoch FROM seen_at - created_at) * 1000 AS ms FROM ${table}) t`,
  );
  const [p50, p95, p99] = (lag.p as number[]).map((v) => Math.round(v * 10) / 10);
  return {
    system,
    rate,
    offered: Math.round(offered),
    sustained: Math.round(Number(lag.sustained)),
    caughtUpSeconds: Math.round(caughtUpSeconds * 10) / 10,
    lagMs: { p50: p50 ?? 0, p95: p95 ?? 0, p99: p99 ?? 0, max: Math.round(Number(lag.max)) },
  };
}

async function oursRun(
  service: TestService,
  source: PgCluster,
  sink: PgCluster,
  rate: number,
): Promise<Result> {
  const table = `live_ours_${rate}`;
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
  try {
    return await measure('ours', src, dst, table, rate);
  } finally {
    await call(service, 'DELETE', `/v1/pipelines/${name}`);
  }
}

async function nativeRun(source: PgCluster, sink: PgCluster, rate: number): Promise<Result> {
  const table = `live_native_${rate}`;
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
  try {
    return await measure('native', src, dst, table, rate);
  } finally {
    await sqlOn(dst, `DROP SUBSCRIPTION ${table}`);
  }
}

const row = (r: Result) =>
  `| ${r.rate} | ${r.system} | ${r.offered} | ${r.sustained} | ${r.caughtUpSeconds} | ${r.lagMs.p50} | ${r.lagMs.p95} | ${r.lagMs.p99} | ${r.lagMs.max} |`;

async function main(): Promise<void> {
  const { binDir } = availableBinDirs()[0] as { binDir: string };
  const defaults = ['synchronous_commit=on', ...(FSYNC ? ['fsync=on', 'full_page_writes=on'] : [])];
  const source = await startPgCluster('live-source', binDir, defaults);
  const sink = await startPgCluster('live-sink', binDir);
  const service = await startTestService({
    ...testConfig(await createDatabase(sink.adminUrl, 'live_store')),
    log: { level: 'warn' },
  });
  const results: Result[] = [];
  try {
    for (const rate of RATES) {
      if (SYSTEMS.includes('native')) {
        results.push(await nativeRun(source, sink, rate));
        console.log(row(results.at(-1) as Result));
      }
      if (SYSTEMS.includes('ours')) {
        results.push(await oursRun(service, source, sink, rate));
        console.log(row(results.at(-1) as Result));
      }
    }
  } finally {
    await service.stop();
    await Promise.all([source.stop(), sink.stop()]);
  }
  const markdown = liveLoadMarkdown(results, await versionOf(binDir));
  console.log(`\n${markdown}`);
  // Only a side-by-side run is a result to keep.
  if (SYSTEMS.includes('native') && SYSTEMS.includes('ours'))
    writeSection('BENCHMARKS.md', 'live-load', markdown);
}

async function versionOf(binDir: string): Promise<string> {
  const { stdout } = await run(join(binDir, 'postgres'), ['--version']);
  return stdout.trim();
}

function liveLoadMarkdown(results: Result[], postgres: string): string {
  return [
    '## Live load',
    '',
    'Single-row transactions at a fixed rate from several clients (a process of their own), with the',
    "source at PostgreSQL's default `synchronous_commit = on`; ours (the pipeline, through the REST",
    'API, default sink properties) and the native subscription one after the other, each on fresh',
    "tables. End-to-end lag is the sink's `clock_timestamp()` default minus the source's, per row;",
    '"caught up after load" is how long after the last insert the sink had every row.',
    '',
    `- Date: ${new Date().toISOString()}; ${postgres}; Node.js ${process.version}`,
    `- ${CLIENTS} clients, ${SECONDS} s per rate, source fsync=${FSYNC ? 'on' : 'off'} (\`LIVE_FSYNC=on\` for the full defaults)`,
    '',
    '```sh',
    'npm run bench:live   # LIVE_RATES=1000,2000,5000 LIVE_SECONDS=20 LIVE_CLIENTS=8',
    '```',
    '',
    '| rate/s | system | offered/s | sustained/s | caught up after load (s) | lag p50 ms | p95 | p99 | max |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(row),
  ].join('\n');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
