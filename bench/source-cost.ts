/**
 * What a source pays for the pipelines that read it: its walsenders, their CPU, the connections the
 * service holds to it, and the latency of its own write load. Two layouts of the same tables, one
 * after the other: one pipeline per table, and one pipeline of all of them. Each: the pipelines are
 * made and started, then single-row inserts at a fixed rate go to the tables in turn from
 * SOURCE_COST_CLIENTS sessions at the source's `synchronous_commit = on`, for SOURCE_COST_SECONDS;
 * the walsenders' CPU is read from /proc over the load, and the run ends when every sink table holds
 * its source table's rows. Prints the table; writes nothing.
 *
 *     SOURCE_COST_TABLES=50 SOURCE_COST_RATE=1000 SOURCE_COST_SECONDS=20 npx tsx bench/source-cost.ts
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn, waitFor } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { clockTicks, procStat } from './cpu-usage.js';
import { table as markdownTable } from './report-format.js';
import { call, type ServiceClient } from './service-api.js';

const run = promisify(execFile);
const TABLES = Number(process.env.SOURCE_COST_TABLES ?? 50);
const RATE = Number(process.env.SOURCE_COST_RATE ?? 1000);
const SECONDS = Number(process.env.SOURCE_COST_SECONDS ?? 20);
const CLIENTS = Number(process.env.SOURCE_COST_CLIENTS ?? 8);

const log = (message: string) =>
  console.log(`[source-cost ${new Date().toISOString().slice(11, 19)}] ${message}`);
const tableNames = Array.from({ length: TABLES }, (_, i) => `public.t${i + 1}`);

interface Layout {
  label: string;
  /** Each pipeline's tables. */
  pipelines: string[][];
}

interface Outcome {
  layout: string;
  pipelines: number;
  walsenders: number;
  walsenderCpuSeconds: number;
  serviceConnections: number;
  offered: number;
  meanMs: number;
  p99Ms: number;
  caughtUpSeconds: number;
}

/** The pids of the source's walsenders and the count of the service's sessions on it. */
async function sourceSessions(adminUrl: string): Promise<{ walsenders: number[]; service: number }> {
  const rows = await sqlOn<{ pid: number; backend_type: string; application_name: string }>(
    adminUrl,
    'SELECT pid, backend_type, application_name FROM pg_stat_activity',
  );
  return {
    walsenders: rows.filter((r) => r.backend_type === 'walsender').map((r) => r.pid),
    service: rows.filter((r) => r.application_name.startsWith('replicator')).length,
  };
}

const cpuOf = (pids: number[]) =>
  pids.reduce((sum, pid) => sum + (procStat(pid)?.own ?? 0), 0) / clockTicks();

async function measure(
  service: ServiceClient,
  layout: Layout,
  urls: { admin: string; source: string; sink: string },
): Promise<Outcome> {
  await sqlOn(urls.source, tableNames.map((t) => `TRUNCATE ${t}`).join('; '));
  await sqlOn(urls.sink, tableNames.map((t) => `DROP TABLE IF EXISTS ${t}`).join('; '));
  const names = layout.pipelines.map((_, i) => `cost-${i + 1}`);
  for (const [i, tables] of layout.pipelines.entries()) {
    await call(service, 'POST', '/v1/pipelines', {
      name: names[i],
      source: { connection: 'cost-src', tables },
      sink: { connection: 'cost-dst', properties: {} },
    });
    await call(service, 'PUT', `/v1/pipelines/${names[i]}/state`, { state: 'start' });
  }
  await waitFor(
    async () => {
      for (const name of names) {
        if ((await call(service, 'GET', `/v1/pipelines/${name}/progress`)).phase !== 'streaming')
          return false;
      }
      return true;
    },
    `${layout.label}: every pipeline streaming`,
    600_000,
    500,
  );
  const sessions = await sourceSessions(urls.admin);
  const cpuBefore = cpuOf(sessions.walsenders);
  const { stdout } = await run(process.execPath, [
    ...process.execArgv,
    join(dirname(fileURLToPath(import.meta.url)), 'source-cost-driver.ts'),
    urls.source,
    String(TABLES),
    String(RATE),
    String(SECONDS),
    String(CLIENTS),
  ]);
  const walsenderCpuSeconds = cpuOf(sessions.walsenders) - cpuBefore;
  const load = JSON.parse(stdout.trim().split('\n').at(-1) as string);
  const loadEnded = performance.now();
  const expected = Math.round(RATE * SECONDS);
  await waitFor(
    async () => {
      const counts = await sqlOn<{ n: string }>(
        urls.sink,
        `SELECT (${tableNames.map((t) => `(SELECT count(*) FROM ${t})`).join(' + ')})::text AS n`,
      );
      return Number(counts[0]?.n) === expected;
    },
    `${layout.label}: every sink table caught up`,
    600_000,
    50,
  );
  const caughtUpSeconds = (performance.now() - loadEnded) / 1000;
  for (const name of names) await call(service, 'DELETE', `/v1/pipelines/${name}`);
  return {
    layout: layout.label,
    pipelines: names.length,
    walsenders: sessions.walsenders.length,
    walsenderCpuSeconds,
    serviceConnections: sessions.service,
    offered: load.offered,
    meanMs: load.meanMs,
    p99Ms: load.p99Ms,
    caughtUpSeconds,
  };
}

async function main(): Promise<void> {
  const { binDir } = availableBinDirs()[0]!;
  // The source at PostgreSQL's default durability for commits, as users run it.
  const source = await startPgCluster('cost-source', binDir, ['synchronous_commit=on']);
  cleanups.push({ what: 'source cluster', run: source.stop });
  const sink = await startPgCluster('cost-sink', binDir);
  cleanups.push({ what: 'sink cluster', run: sink.stop });
  const store = await createDatabase(sink.adminUrl, 'replicator_store');
  const service = await startTestService({
    ...testConfig(store),
    log: { level: 'warn' as const, format: 'json' as const },
  });
  cleanups.push({ what: 'service', run: service.stop });
  const [srcUrl, sinkUrl] = await Promise.all([
    createDatabase(source.adminUrl, 'src'),
    createDatabase(sink.adminUrl, 'dst'),
  ]);
  await sqlOn(srcUrl, tableNames.map((t) => `CREATE TABLE ${t} (id bigint PRIMARY KEY, v text)`).join('; '));
  await call(service, 'POST', '/v1/connections', { name: 'cost-src', type: 'postgres', dsn: srcUrl });
  await call(service, 'POST', '/v1/connections', { name: 'cost-dst', type: 'postgres', dsn: sinkUrl });
  const layouts: Layout[] = [
    { label: `${TABLES} pipelines, one table each`, pipelines: tableNames.map((t) => [t]) },
    { label: `1 pipeline of the ${TABLES} tables`, pipelines: [tableNames] },
  ];
  const outcomes: Outcome[] = [];
  for (const layout of layouts) {
    log(`${layout.label}: starting, then ${RATE} inserts a second for ${SECONDS} s`);
    outcomes.push(await measure(service, layout, { admin: source.adminUrl, source: srcUrl, sink: sinkUrl }));
    log(`${layout.label}: ${JSON.stringify(outcomes.at(-1))}`);
  }
  console.log(
    `\n${markdownTable(
      [
        'layout',
        'pipelines',
        'walsenders',
        `walsender CPU s in ${SECONDS} s`,
        'service sessions on the source',
        'inserts/s offered',
        'insert latency mean / p99 ms',
        'sinks caught up after the load s',
      ],
      outcomes.map((o) => [
        o.layout,
        String(o.pipelines),
        String(o.walsenders),
        o.walsenderCpuSeconds.toFixed(1),
        String(o.serviceConnections),
        o.offered.toFixed(0),
        `${o.meanMs.toFixed(2)} / ${o.p99Ms.toFixed(2)}`,
        o.caughtUpSeconds.toFixed(2),
      ]),
    )}`,
  );
}

await runBenchmark(main);
