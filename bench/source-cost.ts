/**
 * What a source pays for the pipelines that read it: its walsenders and their CPU, the service's
 * sessions on it, the latency of its own write load, and the end-to-end lag of that load. Three
 * layouts of the same tables, one after the other: one pipeline per table each with a slot of its
 * own, one pipeline per table all reading their source connection's shared stream, and one
 * pipeline of all the tables. Each: the sink tables are made beforehand with a `seen_at` column the
 * sink stamps, the pipelines are made and started, then single-row inserts at a fixed rate go to the
 * tables in turn from SOURCE_COST_CLIENTS sessions at the source's `synchronous_commit = on`:
 * SOURCE_COST_WARMUP_SECONDS of them not measured, then SOURCE_COST_SECONDS measured. The service's
 * sessions on the source are read every 500 ms from the start of the pipelines to the end (the most
 * at once is kept), the walsenders' CPU from /proc over the measured load and its catch-up. In the
 * shared layout a pipeline of one more table (`t_join`, 200,000 rows the load does not write) is
 * made and started through the API halfway through the load: the lag of the others' rows before
 * and after that moment shows what its joining costs them. Prints the table and the verdicts and
 * writes them into BENCHMARKS.md (section `source-cost`) when every layout ran.
 *
 *     SOURCE_COST_TABLES=50 SOURCE_COST_RATE=1000 SOURCE_COST_SECONDS=20 npx tsx bench/source-cost.ts
 *
 * SOURCE_COST_LAYOUTS (default own,shared,one) runs some of the layouts; SOURCE_COST_CLIENTS
 * (default 8) the load's sessions; SOURCE_COST_WARMUP_SECONDS (default 5); SOURCE_COST_LOG_LEVEL
 * (default warn) the service's log level; SOURCE_COST_JOIN_ROWS (default 200000) the rows the 51st
 * pipeline copies (0: its joining alone, without a copy); SOURCE_COST_COPY_RATE the service's
 * `shared_stream_copy_rate` (default: the service's default; 0: the copy unpaced).
 */
import { execFile, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Config } from '../src/config/options.js';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn, waitFor } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { writeSection } from './benchmarks-section.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { clockTicks, procStat } from './cpu-usage.js';
import { call, type ServiceClient } from './service-api.js';
import {
  type Join,
  LAYOUT_KEYS,
  type LayoutKey,
  type Outcome,
  type Sessions,
  sourceCostMarkdown,
  sourceCostTable,
  sourceCostVerdicts,
} from './source-cost-report.js';

const run = promisify(execFile);
const TABLES = Number(process.env.SOURCE_COST_TABLES ?? 50);
const RATE = Number(process.env.SOURCE_COST_RATE ?? 1000);
const SECONDS = Number(process.env.SOURCE_COST_SECONDS ?? 20);
const CLIENTS = Number(process.env.SOURCE_COST_CLIENTS ?? 8);
/** The same load, not measured, before the measured one: every pipeline past its first rows. */
const WARMUP_SECONDS = Number(process.env.SOURCE_COST_WARMUP_SECONDS ?? 5);
const LAYOUTS = (process.env.SOURCE_COST_LAYOUTS ?? LAYOUT_KEYS.join(','))
  .split(',')
  .map((k) => k.trim()) as LayoutKey[];
/** Rows of the table the pipeline joining the shared stream halfway through copies. */
const JOIN_ROWS = Number(process.env.SOURCE_COST_JOIN_ROWS ?? 200_000);
/** The service's shared_stream_copy_rate (rows/s, 0: no limit); unset: its default. */
const COPY_RATE =
  process.env.SOURCE_COST_COPY_RATE === undefined ? undefined : Number(process.env.SOURCE_COST_COPY_RATE);
const SAMPLE_MS = 500;

for (const [name, value] of Object.entries({ TABLES, RATE, SECONDS, CLIENTS, WARMUP_SECONDS })) {
  if (!Number.isFinite(value) || value < 0 || (value === 0 && name !== 'WARMUP_SECONDS'))
    throw new Error(`SOURCE_COST_${name}: a positive number`);
}
/** The warm-up's rows have ids below 0, the measured load's from 0. */
const WARMUP_FIRST_ID = -1_000_000_000;
if (LAYOUTS.length === 0 || LAYOUTS.some((k) => !LAYOUT_KEYS.includes(k)))
  throw new Error(`SOURCE_COST_LAYOUTS: a comma list of ${LAYOUT_KEYS.join(', ')}`);

const log = (message: string) =>
  console.log(`[source-cost ${new Date().toISOString().slice(11, 19)}] ${message}`);
const tableNames = Array.from({ length: TABLES }, (_, i) => `public.t${i + 1}`);
const JOIN_TABLE = 'public.t_join';
const SOURCE_COLUMNS =
  'id bigint PRIMARY KEY, v text, created_at timestamptz NOT NULL DEFAULT clock_timestamp()';
/** The sink stamps each row as it is written; the service writes the other columns, as a pre-made target. */
const SINK_COLUMNS = `${SOURCE_COLUMNS}, seen_at timestamptz DEFAULT clock_timestamp()`;

interface Layout {
  key: LayoutKey;
  label: string;
  slot: 'own' | 'shared';
  /** Each pipeline's tables. */
  pipelines: string[][];
}

const layoutsOf = (): Layout[] =>
  [
    {
      key: 'own' as const,
      label: `${TABLES} pipelines, own slots`,
      slot: 'own' as const,
      pipelines: tableNames.map((t) => [t]),
    },
    {
      key: 'shared' as const,
      label: `${TABLES} pipelines, one shared stream`,
      slot: 'shared' as const,
      pipelines: tableNames.map((t) => [t]),
    },
    {
      key: 'one' as const,
      label: `1 pipeline of the ${TABLES} tables`,
      slot: 'shared' as const,
      pipelines: [tableNames],
    },
  ].filter((l) => LAYOUTS.includes(l.key));

/**
 * The service's sessions on the source (application_name `replicator…`), read again and again: the
 * most walsenders, ordinary sessions and both together seen at once, and the CPU of the walsenders
 * since `resetCpu` (a walsender seen first afterwards counts from its start; one that ends counts up
 * to the last reading that saw it).
 */
class SessionWatch {
  private readonly client: pg.Client;
  private readonly ticks = new Map<number, number>();
  private counting = false;
  private cpuTicks = 0;
  private most: Sessions = { walsenders: 0, ordinary: 0, total: 0 };
  /** The sessions by application_name when the most were seen at once. */
  private mostNames: Record<string, number> = {};
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url, application_name: 'source-cost-watch' });
  }

  async start(): Promise<void> {
    await this.client.connect();
    this.loop = (async () => {
      while (!this.stopped) {
        await this.sample();
        await sleep(SAMPLE_MS);
      }
    })();
  }

  /** Reads the sessions once; returns the walsenders' CPU seconds since `resetCpu`. */
  async sample(): Promise<number> {
    const { rows } = await this.client.query<{ pid: number; walsender: boolean; name: string }>(
      `SELECT pid, backend_type = 'walsender' AS walsender, application_name AS name FROM pg_stat_activity
        WHERE application_name LIKE 'replicator%'`,
    );
    const walsenders = rows.filter((r) => r.walsender);
    const now: Sessions = {
      walsenders: walsenders.length,
      ordinary: rows.length - walsenders.length,
      total: rows.length,
    };
    if (now.total > this.most.total) {
      this.mostNames = {};
      for (const r of rows) {
        const key = `${r.name}${r.walsender ? ' (walsender)' : ''}`;
        this.mostNames[key] = (this.mostNames[key] ?? 0) + 1;
      }
    }
    this.most = {
      walsenders: Math.max(this.most.walsenders, now.walsenders),
      ordinary: Math.max(this.most.ordinary, now.ordinary),
      total: Math.max(this.most.total, now.total),
    };
    for (const { pid } of walsenders) {
      const own = procStat(pid)?.own;
      if (own === undefined) continue;
      if (this.counting) this.cpuTicks += own - (this.ticks.get(pid) ?? 0);
      this.ticks.set(pid, own);
    }
    return this.cpuTicks / clockTicks();
  }

  /** Counts the walsenders' CPU from now on. */
  async resetCpu(): Promise<void> {
    this.counting = false;
    await this.sample();
    this.cpuTicks = 0;
    this.counting = true;
  }

  /** The most sessions seen since the last call; logs who they were when the most were seen at once. */
  takeMost(what: string): Sessions {
    const most = this.most;
    const names = this.mostNames;
    log(`${what}: at most ${most.total} sessions at once: ${JSON.stringify(names)}`);
    this.most = { walsenders: 0, ordinary: 0, total: 0 };
    this.mostNames = {};
    return { ...most, names };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client.end();
  }
}

/** Fails when a pipeline failed; logs the error a running one retries on, once per text. */
const seenErrors = new Set<string>();
async function checkPipelines(service: ServiceClient, names: string[]): Promise<void> {
  for (const name of names) {
    const p = await call(service, 'GET', `/v1/pipelines/${name}`);
    if (p.state === 'failed') throw new Error(`pipeline ${name} failed: ${p.error}`);
    if (p.error && !seenErrors.has(`${name}: ${p.error}`)) {
      seenErrors.add(`${name}: ${p.error}`);
      log(`pipeline ${name} (${p.state}) reports: ${p.error}`);
    }
  }
}

async function waitStreaming(
  service: ServiceClient,
  names: string[],
  what: string,
  everyMs: number,
  timeoutMs = 600_000,
) {
  const waiting = new Set(names);
  let polls = 0;
  await waitFor(
    async () => {
      if (++polls % Math.max(1, Math.round(2000 / everyMs)) === 0)
        await checkPipelines(service, [...waiting]);
      for (const name of [...waiting]) {
        if ((await call(service, 'GET', `/v1/pipelines/${name}/progress`)).phase === 'streaming')
          waiting.delete(name);
      }
      return waiting.size === 0;
    },
    what,
    timeoutMs,
    everyMs,
  );
}

async function createAndStart(
  service: ServiceClient,
  name: string,
  tables: string[],
  slot: 'own' | 'shared',
) {
  await call(service, 'POST', '/v1/pipelines', {
    name,
    source: { connection: 'cost-src', tables, slot },
    sink: { connection: 'cost-dst', properties: {} },
  });
  await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
}

/**
 * Makes and starts the pipeline of `t_join` on the shared stream, then waits for it to stream;
 * what came of it goes into `joined` (an error too: the others' figures stand without it).
 */
async function joinHalfway(
  service: ServiceClient,
  sinkUrl: string,
  label: string,
  name: string,
  joined: { value?: Join },
) {
  const asked = performance.now();
  const at = () => ((performance.now() - asked) / 1000).toFixed(2);
  try {
    await call(service, 'POST', '/v1/pipelines', {
      name,
      source: { connection: 'cost-src', tables: [JOIN_TABLE], slot: 'shared' },
      sink: { connection: 'cost-dst', properties: {} },
    });
    const made = at();
    await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
    log(`${label}: ${name} made (${made} s) and started (${at()} s) halfway through the load`);
    // The steps of its start, as its progress shows them, for the log.
    const steps: string[] = [];
    let last = '';
    let polls = 0;
    await waitFor(
      async () => {
        if (++polls % 20 === 0) await checkPipelines(service, [name]);
        const progress = await call(service, 'GET', `/v1/pipelines/${name}/progress`);
        const table = progress.tables?.[0];
        const step = `${progress.phase}/${table?.status ?? '-'}`;
        if (step !== last) steps.push(`${step} (${table?.rows_done ?? 0} rows) at ${at()} s`);
        last = step;
        return progress.phase === 'streaming';
      },
      `${name} streaming`,
      300_000,
      100,
    );
    const toStreamingSeconds = (performance.now() - asked) / 1000;
    const atStreaming = (await sqlOn<{ n: number }>(sinkUrl, sum([JOIN_TABLE])))[0]?.n ?? 0;
    joined.value = { toStreamingSeconds, sinkRowsAtStreaming: atStreaming, sinkRows: 0 };
    log(
      `${label}: ${name} streaming after ${toStreamingSeconds.toFixed(2)} s, ${atStreaming} rows of ${JOIN_TABLE} in the sink then; its steps: ${steps.join(', ')}`,
    );
  } catch (error) {
    const p = await service.request('GET', `/v1/pipelines/${name}`).catch(() => undefined);
    const message = `${error instanceof Error ? error.message : String(error)}; GET ${name}: ${JSON.stringify(
      p?.body && { state: p.body.state, error: p.body.error },
    )}`;
    joined.value = { sinkRows: 0, error: message };
    log(`${label}: ${name} did not stream: ${message}`);
  }
}

/** Runs the load driver for `seconds`, ids from `firstId`; `onStart` gets the time of its first insert. */
function drive(
  url: string,
  seconds: number,
  firstId: number,
  onStart: (startedAt: number) => void = () => {},
) {
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      join(dirname(fileURLToPath(import.meta.url)), 'source-cost-driver.ts'),
      url,
      String(TABLES),
      String(RATE),
      String(seconds),
      String(CLIENTS),
      String(firstId),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let last = '';
  createInterface({ input: child.stdout }).on('line', (line) => {
    const parsed = line.startsWith('{') ? JSON.parse(line) : undefined;
    if (parsed?.startedAt !== undefined) onStart(parsed.startedAt);
    else if (parsed) last = line;
  });
  return new Promise<{ offered: number; meanMs: number; p99Ms: number }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 && last ? resolve(JSON.parse(last)) : reject(new Error(`load driver exited with ${code}`)),
    );
  });
}

/** Lag of every row of the load at the sink: from its insert at the source to its sink transaction's commit. */
async function lagOf(sinkUrl: string, splitAt: number) {
  const rows = tableNames
    .map(
      (t, i) =>
        `SELECT ${i} AS t, created_at, greatest(pg_xact_commit_timestamp(xmin), seen_at) AS visible_at FROM ${t} WHERE id >= 0`,
    )
    .join(' UNION ALL ');
  const ms = 'extract(epoch FROM visible_at - created_at) * 1000';
  const [row] = await sqlOn(
    sinkUrl,
    `WITH v AS (SELECT t, created_at, visible_at, ${ms} AS lag FROM (${rows}) r),
          per_table AS (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99 FROM v GROUP BY t)
     SELECT count(*)::int AS n,
            percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY lag) AS p,
            max(lag) AS max,
            (SELECT max(p99) FROM per_table) AS worst_table_p99,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) FILTER (WHERE created_at < to_timestamp($1)) AS first_p99,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) FILTER (WHERE created_at >= to_timestamp($1)) AS second_p99,
            count(*) FILTER (WHERE created_at < to_timestamp($1))::int AS first_n,
            extract(epoch FROM max(visible_at) - max(created_at)) AS caught_up
       FROM v`,
    [splitAt / 1000],
  );
  const [p50, p99] = (row.p as number[]).map(Number);
  // Where in the load the lag was: p99 / max of each second's rows, to read in the log.
  const seconds = await sqlOn<{ s: number; p99: number; max: number; split: number }>(
    sinkUrl,
    `WITH v AS (SELECT created_at, ${ms} AS lag FROM (${rows}) r), s AS (SELECT min(created_at) AS t0 FROM v)
     SELECT floor(extract(epoch FROM created_at - s.t0))::int AS s,
            round(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag)::numeric) AS p99, round(max(lag)::numeric) AS max,
            floor($1 - extract(epoch FROM s.t0))::int AS split
       FROM v, s GROUP BY 1, s.t0 ORDER BY 1`,
    [splitAt / 1000],
  );
  log(`lag p99/max ms by second of the load: ${seconds.map((x) => `${x.s}:${x.p99}/${x.max}`).join(' ')}`);
  return {
    rows: row.n as number,
    p50Ms: p50 ?? 0,
    p99Ms: p99 ?? 0,
    maxMs: Number(row.max),
    worstTableP99Ms: Number(row.worst_table_p99),
    firstHalfP99Ms: Number(row.first_p99),
    secondHalfP99Ms: Number(row.second_p99),
    firstHalfRows: row.first_n as number,
    caughtUpSeconds: Number(row.caught_up),
    p99BySecond: seconds.map((x) => Number(x.p99)),
    splitSecond: seconds[0]?.split ?? 0,
  };
}

const sum = (tables: string[], where = 'true') =>
  `SELECT (${tables.map((t) => `(SELECT count(*) FROM ${t} WHERE ${where})`).join(' + ')})::int AS n`;

async function measure(
  service: ServiceClient,
  layout: Layout,
  urls: { admin: string; source: string; sink: string },
): Promise<Outcome> {
  await sqlOn(urls.source, tableNames.map((t) => `TRUNCATE ${t}`).join('; '));
  await sqlOn(
    urls.sink,
    [...tableNames, JOIN_TABLE]
      .map((t) => `DROP TABLE IF EXISTS ${t}`)
      .concat(tableNames.map((t) => `CREATE TABLE ${t} (${SINK_COLUMNS})`))
      .join('; '),
  );
  const names = layout.pipelines.map((_, i) => `${layout.key}-${i + 1}`);
  const joinName = `${layout.key}-join`;
  const watch = new SessionWatch(urls.admin);
  await watch.start();
  const joined: { value?: Join } = {};
  try {
    const startedAt = performance.now();
    for (const [i, tables] of layout.pipelines.entries())
      await createAndStart(service, names[i] as string, tables, layout.slot);
    await waitStreaming(service, names, `${layout.label}: every pipeline streaming`, 500);
    const startupSeconds = (performance.now() - startedAt) / 1000;
    log(`${layout.label}: every pipeline streaming after ${startupSeconds.toFixed(1)} s`);
    if (WARMUP_SECONDS > 0) {
      await drive(urls.source, WARMUP_SECONDS, WARMUP_FIRST_ID);
      const warmRows = Math.round(RATE * WARMUP_SECONDS);
      await waitFor(
        async () => (await sqlOn<{ n: number }>(urls.sink, sum(tableNames, 'id < 0')))[0]?.n === warmRows,
        `${layout.label}: the warm-up's rows in the sink`,
        600_000,
        100,
      );
      log(`${layout.label}: ${WARMUP_SECONDS} s of warm-up load in the sink`);
    }
    const startup = watch.takeMost(`${layout.label}, start-up`);
    log(`${layout.label}: load starts`);

    await watch.resetCpu();
    // The service runs in this process: its CPU and how late its event loop ran, for the log.
    const cpuBefore = process.cpuUsage();
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    let splitAt = 0;
    let firstHalf: Sessions = { walsenders: 0, ordinary: 0, total: 0 };
    let cpuFirstHalf = 0;
    let joining: Promise<void> | undefined;
    let halfway: NodeJS.Timeout | undefined;
    const loadRun = drive(urls.source, SECONDS, 0, (loadStartedAt) => {
      halfway = setTimeout(
        () => {
          splitAt = Date.now();
          firstHalf = watch.takeMost(`${layout.label}, load, 1st half`);
          if (layout.key === 'shared')
            joining = joinHalfway(service, urls.sink, layout.label, joinName, joined);
          void watch.sample().then((cpu) => {
            cpuFirstHalf = cpu;
          });
        },
        Math.max(0, loadStartedAt + (SECONDS * 1000) / 2 - Date.now()),
      );
    });
    let load: Awaited<typeof loadRun>;
    try {
      load = await loadRun;
    } finally {
      clearTimeout(halfway);
    }
    const expected = Math.round(RATE * SECONDS);
    let polls = 0;
    await waitFor(
      async () => {
        if (++polls % 40 === 0) await checkPipelines(service, names);
        return (await sqlOn<{ n: number }>(urls.sink, sum(tableNames, 'id >= 0')))[0]?.n === expected;
      },
      `${layout.label}: every sink table caught up`,
      600_000,
      50,
    );
    const walsenderCpuSeconds = await watch.sample();
    loopDelay.disable();
    const cpu = process.cpuUsage(cpuBefore);
    log(
      `${layout.label}: this process (the service and the benchmark) used ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU ` +
        `over the load and its catch-up; its event loop ran late by ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms at p99, ` +
        `${(loopDelay.max / 1e6).toFixed(0)} ms at most`,
    );
    await joining;
    if (joined.value) {
      joined.value.sinkRows = (await sqlOn<{ n: number }>(urls.sink, sum([JOIN_TABLE])))[0]?.n ?? 0;
    }
    const secondHalf = watch.takeMost(`${layout.label}, load, 2nd half`);
    const lag = await lagOf(urls.sink, splitAt);
    return {
      key: layout.key,
      layout: layout.label,
      pipelines: names.length,
      startupSeconds,
      startup,
      during: [firstHalf, secondHalf],
      walsenderCpuSeconds,
      walsenderCpuFirstHalf: cpuFirstHalf,
      offered: load.offered,
      insertMeanMs: load.meanMs,
      insertP99Ms: load.p99Ms,
      ...lag,
      ...(joined.value ? { join: joined.value } : {}),
    };
  } finally {
    await watch.stop();
    for (const name of [...names, ...(layout.key === 'shared' ? [joinName] : [])]) {
      const res = await service.request('DELETE', `/v1/pipelines/${name}`);
      if (res.status >= 300 && res.status !== 404)
        log(`DELETE ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    await released(urls.admin);
  }
}

/** Waits for the layout's slots and walsenders to be gone, so that the next layout counts its own. */
async function released(adminUrl: string): Promise<void> {
  const left = async () =>
    (
      await sqlOn<{ slots: number; walsenders: number }>(
        adminUrl,
        `SELECT (SELECT count(*) FROM pg_replication_slots)::int AS slots,
                (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender')::int AS walsenders`,
      )
    )[0];
  try {
    await waitFor(
      async () => {
        const l = await left();
        return l?.slots === 0 && l.walsenders === 0;
      },
      'slots and walsenders released',
      120_000,
      250,
    );
  } catch {
    log(`slots and walsenders still there after the pipelines were deleted: ${JSON.stringify(await left())}`);
  }
}

async function main(): Promise<void> {
  const date = new Date();
  const load = loadavg()[0] ?? 0;
  const { binDir } = availableBinDirs()[0]!;
  // The source at PostgreSQL's default durability for commits, as users run it.
  const source = await startPgCluster('cost-source', binDir, ['synchronous_commit=on']);
  cleanups.push({ what: 'source cluster', run: source.stop });
  // The sink records when each transaction commits: the moment its rows become visible.
  const sink = await startPgCluster('cost-sink', binDir, ['track_commit_timestamp=on']);
  cleanups.push({ what: 'sink cluster', run: sink.stop });
  const store = await createDatabase(sink.adminUrl, 'replicator_store');
  const service = await startTestService({
    ...testConfig(store),
    ...(COPY_RATE === undefined ? {} : { sharedStreamCopyRowsPerSecond: COPY_RATE }),
    // SOURCE_COST_LOG_LEVEL (default warn), e.g. info to follow the pipelines.
    log: { level: (process.env.SOURCE_COST_LOG_LEVEL ?? 'warn') as Config['log']['level'], format: 'json' },
  });
  cleanups.push({ what: 'service', run: service.stop });
  const [srcUrl, sinkUrl] = await Promise.all([
    createDatabase(source.adminUrl, 'src'),
    createDatabase(sink.adminUrl, 'dst'),
  ]);
  await sqlOn(
    srcUrl,
    [
      ...tableNames.map((t) => `CREATE TABLE ${t} (${SOURCE_COLUMNS})`),
      `CREATE TABLE ${JOIN_TABLE} (${SOURCE_COLUMNS})`,
      `INSERT INTO ${JOIN_TABLE} (id, v) SELECT g, md5(g::text) FROM generate_series(1, ${JOIN_ROWS}) g`,
    ].join('; '),
  );
  await sqlOn(srcUrl, `VACUUM ANALYZE ${JOIN_TABLE}`);
  await call(service, 'POST', '/v1/connections', { name: 'cost-src', type: 'postgres', dsn: srcUrl });
  await call(service, 'POST', '/v1/connections', { name: 'cost-dst', type: 'postgres', dsn: sinkUrl });
  const outcomes: Outcome[] = [];
  for (const layout of layoutsOf()) {
    log(`${layout.label}: starting, then ${RATE} inserts a second for ${SECONDS} s`);
    outcomes.push(await measure(service, layout, { admin: source.adminUrl, source: srcUrl, sink: sinkUrl }));
    log(`${layout.label}: ${JSON.stringify(outcomes.at(-1))}`);
  }
  const settings = {
    tables: TABLES,
    rate: RATE,
    seconds: SECONDS,
    clients: CLIENTS,
    warmupSeconds: WARMUP_SECONDS,
    joinRows: JOIN_ROWS,
    copyRate: COPY_RATE ?? testConfig(store).sharedStreamCopyRowsPerSecond,
  };
  console.log(
    `\n${sourceCostTable(outcomes, settings)}\n\n${sourceCostVerdicts(outcomes, settings).join('\n')}\n`,
  );
  if (LAYOUTS.length === LAYOUT_KEYS.length) {
    const version = (await run(join(binDir, 'postgres'), ['--version'])).stdout.trim();
    const postgres = `PostgreSQL ${version.split(' ').at(-1)}`;
    writeSection(
      'BENCHMARKS.md',
      'source-cost',
      sourceCostMarkdown(outcomes, settings, { date, postgres, load }),
    );
    log('section source-cost written to BENCHMARKS.md');
  } else {
    log(`SOURCE_COST_LAYOUTS=${LAYOUTS.join(',')}: only some layouts ran, BENCHMARKS.md is left as it is`);
  }
}

await runBenchmark(main);
