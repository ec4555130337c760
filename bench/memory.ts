import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase } from '../test/support/pg-cluster.js';
import { sqlOn, tableDigest } from '../test/support/replication-fixture.js';
import { createOursPipeline, deleteOursPipeline } from './ours-pipeline.js';
import { call } from './service-api.js';
import {
  prepareServiceCli,
  processMemory,
  type ServiceCli,
  type ServiceProcess,
  startServiceProcess,
} from './service-process.js';
import { startTcpRelay, type TcpRelay, viaRelay } from './tcp-relay.js';
import {
  BENCH_TABLE,
  BENCH_TABLE_DDL,
  bigTransactionWorkload,
  singleRowWorkload,
  type Workload,
  writeBacklog,
} from './workloads.js';

const MiB = 1024; // KiB per MiB
const SCENARIO_TITLES = {
  queue: 'sink stopped while changes queue up',
  big: 'one big transaction',
  crash: 'one big transaction, its apply interrupted by a kill -9',
} as const;
export const SAMPLE_MS = 100;
const POLL_MS = 100;
const REST_SECONDS = 2;

/** The memory benchmark's row counts and the time the sink stays down after the backlog is written. */
export interface MemoryOptions {
  /** `MEMORY_ROWS` (default 1,000,000 × BENCH_SCALE): single-row transactions queued while the sink is down. */
  queueRows: number;
  /** `MEMORY_BIG_ROWS` (default 5,000,000 × BENCH_SCALE): rows of the one big transaction. */
  bigRows: number;
  /** `MEMORY_CRASH_ROWS` (default 3,000,000 × BENCH_SCALE): rows of the transaction whose apply a kill -9 interrupts. */
  crashRows: number;
  /** `MEMORY_SCENARIOS` (default all: queue,big,crash): the scenarios to run. */
  scenarios: readonly MemoryScenario['key'][];
  /** `MEMORY_DOWN_SECONDS` (default 10): how long the sink stays down once the backlog is written. */
  downSeconds: number;
  cli: ServiceCli;
}

export function memoryOptions(
  scale: number,
  cli: ServiceCli,
  env: NodeJS.ProcessEnv = process.env,
): MemoryOptions {
  const count = (name: string, fallback: number) => {
    const text = env[name];
    if (text === undefined) return Math.max(1, Math.round(fallback * scale));
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got '${text}'`);
    return n;
  };
  const down = Number(env.MEMORY_DOWN_SECONDS ?? '10');
  if (!Number.isFinite(down) || down < 0) throw new Error('MEMORY_DOWN_SECONDS must be a number of seconds');
  const scenarios = (env.MEMORY_SCENARIOS ?? 'queue,big,crash').split(',').map((k) => k.trim());
  for (const key of scenarios) {
    if (!SCENARIO_KEYS.includes(key as MemoryScenario['key']))
      throw new Error(`MEMORY_SCENARIOS lists '${key}'; the scenarios are ${SCENARIO_KEYS.join(', ')}`);
  }
  return {
    queueRows: count('MEMORY_ROWS', 1_000_000),
    bigRows: count('MEMORY_BIG_ROWS', 5_000_000),
    crashRows: count('MEMORY_CRASH_ROWS', 3_000_000),
    scenarios: scenarios as MemoryScenario['key'][],
    downSeconds: down,
    cli,
  };
}

/** One stretch of a scenario, with the service's memory over it. */
export interface MemoryPhase {
  name: string;
  seconds: number;
  /** Highest VmRSS seen by the samples (every 100 ms) during the phase, MiB. */
  rssPeakMiB: number;
  /** VmHWM at the end of the phase: the process's peak so far, however short, MiB. */
  hwmMiB: number;
  /** Highest `process.memoryUsage()` figures of the service seen during the phase (each its own maximum), MiB. */
  heapUsedPeakMiB: number;
  heapTotalPeakMiB: number;
  /** The young generation's part of the heap. */
  newSpacePeakMiB: number;
  /** Memory outside V8's heap held by JavaScript objects (Buffers among them), array buffers included. */
  externalPeakMiB: number;
  arrayBuffersPeakMiB: number;
}

const SCENARIO_KEYS = ['queue', 'big', 'crash'] as const;

export interface MemoryScenario {
  key: (typeof SCENARIO_KEYS)[number];
  label: string;
  workload: Workload;
  writeSeconds: number;
  /** VmRSS with the pipeline streaming and idle, before the scenario, MiB. */
  restMiB: number;
  /** VmHWM at the end: the scenario's peak (the process started for it), MiB. */
  peakMiB: number;
  phases: MemoryPhase[];
  /** From the sink back (queue) or the end of the write (big) to the first and the last row visible. */
  firstRowSeconds: number;
  lastRowSeconds: number;
  /** CPU seconds of the service process over the scenario. */
  cpuSeconds: number;
  /** Queue only: the pipeline states seen while the sink was down, and its last error. */
  statesWhileDown?: string[];
  errorWhileDown?: string | null;
  /** Queue only, at the end of the down phase: WAL after the slot's confirmed position, and how much of it the walsender had sent. */
  backlogWalMiB?: number;
  sentWhileDownMiB?: number | null;
}

export interface MemoryResults {
  options: MemoryOptions;
  postgres: string;
  load: number;
  scenarios: MemoryScenario[];
}

const cpuSecondsOf = (pid: number) => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
};

const USAGE_FIELDS = ['heapUsed', 'heapTotal', 'newSpace', 'external', 'arrayBuffers'] as const;
type UsagePeaks = Record<(typeof USAGE_FIELDS)[number], number>;

/**
 * Samples the service's VmRSS and its own `process.memoryUsage()` every 100 ms and splits the
 * figures into named phases.
 */
function sampler(service: ServiceProcess) {
  const phases: MemoryPhase[] = [];
  let current: { name: string; started: number; peak: number; usage: UsagePeaks } | undefined;
  const sample = () => {
    const m = processMemory(service.pid);
    const usage = service.usage();
    if (current) {
      if (m) current.peak = Math.max(current.peak, m.rssKiB);
      if (usage) for (const f of USAGE_FIELDS) current.usage[f] = Math.max(current.usage[f], usage[f]);
    }
    return m;
  };
  const timer = setInterval(sample, SAMPLE_MS);
  const end = () => {
    const m = sample();
    if (!current) return;
    phases.push({
      name: current.name,
      seconds: (performance.now() - current.started) / 1000,
      rssPeakMiB: current.peak / MiB,
      hwmMiB: (m?.hwmKiB ?? Number.NaN) / MiB,
      heapUsedPeakMiB: current.usage.heapUsed / 2 ** 20,
      heapTotalPeakMiB: current.usage.heapTotal / 2 ** 20,
      newSpacePeakMiB: current.usage.newSpace / 2 ** 20,
      externalPeakMiB: current.usage.external / 2 ** 20,
      arrayBuffersPeakMiB: current.usage.arrayBuffers / 2 ** 20,
    });
    current = undefined;
  };
  return {
    phase(name: string) {
      end();
      current = {
        name,
        started: performance.now(),
        peak: 0,
        usage: { heapUsed: 0, heapTotal: 0, newSpace: 0, external: 0, arrayBuffers: 0 },
      };
      sample();
    },
    stop() {
      end();
      clearInterval(timer);
      return phases;
    },
  };
}

/** The figures of a scenario whose rows are all in: its phases, CPU and peak; then checks and cleans up. */
async function endScenario(
  service: ServiceProcess,
  s: ReturnType<typeof sampler>,
  cpuBefore: number,
  urls: { source: string; sink: string },
  workload: Workload,
  name: string,
) {
  const phases = s.stop();
  const cpuSeconds = cpuSecondsOf(service.pid) - cpuBefore;
  const peakMiB = (processMemory(service.pid)?.hwmKiB ?? Number.NaN) / MiB;
  await checkDigest(urls.source, urls.sink, workload.label);
  await deleteOursPipeline(service, name);
  return { phases, cpuSeconds, peakMiB };
}

/** Waits until row `id` is visible, then until the sink holds `rows` rows; seconds since `started` to each. */
async function waitRows(sinkUrl: string, workload: Workload, started: number, failIf: () => Promise<void>) {
  const timeoutMs = Math.max(600_000, workload.rows * 2);
  let first: number | undefined;
  let polls = 0;
  for (;;) {
    // Index probes (the first and the last row) instead of count(*), which would scan millions of
    // rows on every poll: rows are applied in the source's order.
    const [row] = await sqlOn<{ first: boolean; last: boolean }>(
      sinkUrl,
      `SELECT EXISTS (SELECT 1 FROM ${BENCH_TABLE} WHERE id = 1) AS first,
              EXISTS (SELECT 1 FROM ${BENCH_TABLE} WHERE id = $1) AS last`,
      [workload.rows],
    );
    const elapsed = (performance.now() - started) / 1000;
    if (row?.first || row?.last) first ??= elapsed;
    if (row?.last) {
      const [c] = await sqlOn<{ n: number }>(sinkUrl, `SELECT count(*)::int AS n FROM ${BENCH_TABLE}`);
      if (c?.n === workload.rows)
        return { first: first ?? elapsed, last: (performance.now() - started) / 1000 };
    }
    if (elapsed * 1000 > timeoutMs)
      throw new Error(`${workload.label}: not applied after ${elapsed.toFixed(0)} s`);
    if (++polls % 20 === 0) await failIf();
    await sleep(POLL_MS);
  }
}

async function pipelineState(service: ServiceProcess, name: string) {
  const pipeline = await call(service, 'GET', `/v1/pipelines/${name}`);
  return { state: String(pipeline.state), error: (pipeline.error as string | null) ?? null };
}

const failIfFailed = (service: ServiceProcess, name: string) => async () => {
  const { state, error } = await pipelineState(service, name);
  if (state === 'failed') throw new Error(`pipeline ${name} failed: ${error}`);
};

async function checkDigest(sourceUrl: string, sinkUrl: string, label: string) {
  const [expected, actual] = await Promise.all([
    tableDigest(sourceUrl, BENCH_TABLE, 'id'),
    tableDigest(sinkUrl, BENCH_TABLE, 'id'),
  ]);
  if (expected.md5 !== actual.md5) throw new Error(`${label}: the sink differs from the source`);
}

/** Runs one scenario against a service process started for it (its VmHWM is the scenario's own). */
async function withService<T>(
  storeUrl: string,
  cli: ServiceCli,
  log: (m: string) => void,
  options: { dataDir?: string },
  body: (service: ServiceProcess) => Promise<T>,
): Promise<T> {
  const service = await startServiceProcess(storeUrl, cli, options);
  log(
    `  service process ${service.pid} started (${cli}), VmRSS ${((processMemory(service.pid)?.rssKiB ?? 0) / MiB).toFixed(0)} MiB`,
  );
  try {
    return await body(service);
  } catch (error) {
    log(`  service output, last lines:\n${service.output().split('\n').slice(-20).join('\n')}`);
    throw error;
  } finally {
    await service.stop();
  }
}

/**
 * (a) The sink stopped while single-row transactions queue up: our pipeline streams into a sink
 * reached through a relay; the relay goes down (connections cut, port closed), the backlog is
 * written on the source, the sink stays down `downSeconds` more, then comes back and the pipeline
 * drains the backlog.
 */
async function queueScenario(
  options: MemoryOptions,
  urls: { source: string; sink: string; store: string },
  log: (m: string) => void,
): Promise<MemoryScenario> {
  const workload = singleRowWorkload(options.queueRows);
  const name = 'memory-queue';
  let relay: TcpRelay | undefined;
  try {
    return await withService(urls.store, options.cli, log, {}, async (service) => {
      const sink = new URL(urls.sink);
      relay = await startTcpRelay(sink.hostname, Number(sink.port));
      const ours = await createOursPipeline(service, urls.source, viaRelay(urls.sink, relay), name);
      const cpuBefore = cpuSecondsOf(service.pid);
      const s = sampler(service);
      s.phase('streaming, idle');
      await sleep(REST_SECONDS * 1000);
      const restMiB = (processMemory(service.pid)?.rssKiB ?? 0) / MiB;
      s.phase('sink down: backlog written, then held');
      await relay.down();
      log(`  sink down; writing ${workload.label}`);
      const states = new Set<string>();
      let lastError: string | null = null;
      const watch = setInterval(() => {
        pipelineState(service, name).then(
          ({ state, error }) => {
            states.add(state);
            lastError = error ?? lastError;
          },
          () => undefined,
        );
      }, 1000);
      let writeSeconds: number;
      let backlog: { unconfirmed: string; sent: string | null } | undefined;
      try {
        writeSeconds = await writeBacklog(urls.source, workload);
        await sleep(options.downSeconds * 1000);
        [backlog] = await sqlOn<{ unconfirmed: string; sent: string | null }>(
          urls.source,
          `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn) AS unconfirmed,
                  pg_wal_lsn_diff(r.sent_lsn, s.confirmed_flush_lsn) AS sent
             FROM pg_replication_slots s LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid
            WHERE s.slot_name = $1`,
          [ours.slot],
        );
      } finally {
        clearInterval(watch);
      }
      s.phase('sink back: draining');
      await relay.up();
      const started = performance.now();
      log(
        `  sink back after ${writeSeconds.toFixed(1)} s of writing and ${options.downSeconds} s held; draining`,
      );
      const { first, last } = await waitRows(urls.sink, workload, started, failIfFailed(service, name));
      const { phases, cpuSeconds, peakMiB } = await endScenario(service, s, cpuBefore, urls, workload, name);
      return {
        key: 'queue' as const,
        label: `Sink stopped while ${workload.rows.toLocaleString('en-US')} single-row transactions queue up`,
        workload,
        writeSeconds,
        restMiB,
        peakMiB,
        phases,
        firstRowSeconds: first,
        lastRowSeconds: last,
        cpuSeconds,
        statesWhileDown: [...states],
        errorWhileDown: lastError,
        backlogWalMiB: Number(backlog?.unconfirmed) / 2 ** 20,
        sentWhileDownMiB: backlog?.sent == null ? null : Number(backlog.sent) / 2 ** 20,
      };
    });
  } finally {
    await relay?.close();
  }
}

/** (b) One big transaction written while our pipeline streams, then applied. */
async function bigScenario(
  options: MemoryOptions,
  urls: { source: string; sink: string; store: string },
  log: (m: string) => void,
): Promise<MemoryScenario> {
  const workload = bigTransactionWorkload(options.bigRows);
  const name = 'memory-big';
  return withService(urls.store, options.cli, log, {}, async (service) => {
    await createOursPipeline(service, urls.source, urls.sink, name);
    const cpuBefore = cpuSecondsOf(service.pid);
    const s = sampler(service);
    s.phase('streaming, idle');
    await sleep(REST_SECONDS * 1000);
    const restMiB = (processMemory(service.pid)?.rssKiB ?? 0) / MiB;
    s.phase('transaction being written');
    log(`  writing ${workload.label}`);
    const writeSeconds = await writeBacklog(urls.source, workload);
    s.phase('committed: applying');
    const started = performance.now();
    const { first, last } = await waitRows(urls.sink, workload, started, failIfFailed(service, name));
    const { phases, cpuSeconds, peakMiB } = await endScenario(service, s, cpuBefore, urls, workload, name);
    return {
      key: 'big' as const,
      label: `One transaction of ${workload.rows.toLocaleString('en-US')} rows`,
      workload,
      writeSeconds,
      restMiB,
      peakMiB,
      phases,
      firstRowSeconds: first,
      lastRowSeconds: last,
      cpuSeconds,
    };
  });
}

/**
 * (c) One big transaction whose apply a kill -9 of the service interrupts: a new process on the
 * same data directory receives it again whole and applies it. Its memory is the new process's.
 */
async function crashScenario(
  options: MemoryOptions,
  urls: { source: string; sink: string; store: string },
  log: (m: string) => void,
): Promise<MemoryScenario> {
  const workload = bigTransactionWorkload(options.crashRows);
  const name = 'memory-crash';
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-bench-crash-'));
  try {
    const first = await startServiceProcess(urls.store, options.cli, { dataDir });
    try {
      await createOursPipeline(first, urls.source, urls.sink, name);
      log(`  writing ${workload.label}`);
      const writeSeconds = await writeBacklog(urls.source, workload);
      const started = performance.now();
      // The first pieces are in the sink once its first row is.
      for (;;) {
        const [row] = await sqlOn<{ first: boolean }>(
          urls.sink,
          `SELECT EXISTS (SELECT 1 FROM ${BENCH_TABLE} WHERE id = 1) AS first`,
        );
        if (row?.first) break;
        if (performance.now() - started > 600_000)
          throw new Error(`${workload.label}: no row applied in 600 s`);
        await failIfFailed(first, name)();
        await sleep(POLL_MS);
      }
      log(`  first rows applied after ${((performance.now() - started) / 1000).toFixed(1)} s: kill -9`);
      await first.kill();
      return await withService(urls.store, options.cli, log, { dataDir }, async (service) => {
        const cpuBefore = cpuSecondsOf(service.pid);
        const s = sampler(service);
        const restMiB = (processMemory(service.pid)?.rssKiB ?? 0) / MiB;
        s.phase('restarted: received again, applied');
        const restarted = performance.now();
        const { first: firstRow, last } = await waitRows(
          urls.sink,
          workload,
          restarted,
          failIfFailed(service, name),
        );
        const { phases, cpuSeconds, peakMiB } = await endScenario(
          service,
          s,
          cpuBefore,
          urls,
          workload,
          name,
        );
        return {
          key: 'crash' as const,
          label: `One transaction of ${workload.rows.toLocaleString('en-US')} rows, applied again after a kill -9`,
          workload,
          writeSeconds,
          restMiB,
          peakMiB,
          phases,
          firstRowSeconds: firstRow,
          lastRowSeconds: last,
          cpuSeconds,
        };
      });
    } finally {
      await first.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The memory benchmark: each scenario runs against a service process of its own, started for it,
 * with its metadata store, source and sink databases fresh on the given clusters.
 */
export async function runMemoryBenchmark(o: {
  sourceAdminUrl: string;
  sinkAdminUrl: string;
  options: MemoryOptions;
  log: (message: string) => void;
}): Promise<MemoryResults> {
  const { options, log } = o;
  await prepareServiceCli(options.cli, log);
  const [version] = await sqlOn<{ v: string }>(
    o.sourceAdminUrl,
    "SELECT current_setting('server_version') AS v",
  );
  const load = loadavg()[0] ?? 0;
  const scenarios: MemoryScenario[] = [];
  for (const [key, run] of [
    ['queue', queueScenario],
    ['big', bigScenario],
    ['crash', crashScenario],
  ] as const) {
    if (!options.scenarios.includes(key)) continue;
    const [source, sink, store] = await Promise.all([
      createDatabase(o.sourceAdminUrl, `memory_src_${key}`),
      createDatabase(o.sinkAdminUrl, `memory_sink_${key}`),
      createDatabase(o.sinkAdminUrl, `memory_store_${key}`),
    ]);
    await sqlOn(source, BENCH_TABLE_DDL);
    log(`memory: ${SCENARIO_TITLES[key]}`);
    const scenario = await run(options, { source, sink, store }, log);
    log(
      `  peak RSS (VmHWM) ${scenario.peakMiB.toFixed(0)} MiB; rows visible ${scenario.firstRowSeconds.toFixed(1)} s / all ${scenario.lastRowSeconds.toFixed(1)} s after ${{ queue: 'the sink came back', big: 'the commit', crash: 'the restart' }[key]}`,
    );
    scenarios.push(scenario);
    await Promise.all([
      sqlOn(o.sourceAdminUrl, `DROP DATABASE memory_src_${key} WITH (FORCE)`),
      sqlOn(o.sinkAdminUrl, `DROP DATABASE memory_sink_${key} WITH (FORCE)`),
      sqlOn(o.sinkAdminUrl, `DROP DATABASE memory_store_${key} WITH (FORCE)`),
    ]);
  }
  return { options, postgres: version?.v ?? 'unknown', load, scenarios };
}
