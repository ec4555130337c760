import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  availableBinDirs,
  createDatabase,
  type PgCluster,
  startPgCluster,
} from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../test/support/service.js';
import { writeSection } from './benchmarks-section.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { postmasterPid } from './cpu-usage.js';
import { secondsUntil } from './poll.js';
import { codeVersion, machineInfo } from './report.js';
import { rate, secs } from './report-format.js';
import { call } from './service-api.js';
import type { ReferenceInput, SinkReference } from './sink-reference.js';
import { SINK_REFERENCES } from './sink-references.js';
import { backlogChanges, type Digest, type RunShape, type SinkTarget } from './sink-target.js';
import {
  type Cpu,
  medianResult,
  type ReferenceResult,
  type SinkResult,
  type SinksReport,
  sinksDetailTable,
  sinksMarkdown,
  sinksSummaryTable,
} from './sinks-report.js';
import { ensureSinkServers, type SinkServers, sinkServers, treeCpuSeconds } from './sinks-servers.js';
import { SINK_KINDS, type SinkKind, sinkTarget } from './sinks-targets.js';
import { fillSnapshotTable, SNAPSHOT_TABLE } from './snapshot-table.js';
import { slotOf, waitSlotInactive } from './source-slot.js';
import { pgDigest } from './sql-targets.js';
import { type Workload, writeBacklog } from './workloads.js';

/**
 * The sink benchmark: one table through each sink type (postgres, the reference; mysql, into the
 * machine's MariaDB; redis, nats and rabbitmq, into the machine's Redis, NATS JetStream and
 * RabbitMQ; webhook, to an HTTP receiver process verifying signatures), each through the REST API as a user
 * would set it up: a snapshot of `SINKS_ROWS` rows (default 1,000,000), then the drain of a
 * backlog of `SINKS_CHANGES` changes (default 200,000: half updates, half inserts, two per
 * transaction) written while the pipeline was paused. Prints the figures and writes the `sinks`
 * section of BENCHMARKS.md. `SINKS` (default: every kind of SINK_KINDS, in that order) picks the
 * sinks; `SINKS_TIMEOUT_S` (default 1200) bounds each timed phase; `SINKS_SYNCHRONOUS_COMMIT`
 * (default: the harness's `off`) sets the source's `synchronous_commit`, and `on` runs the source
 * at PostgreSQL's defaults (`fsync` and `full_page_writes` on too), written to a section of its own.
 * `SINKS_RUNS` (default 1) runs each sink that many times and reports each phase's median run.
 * After a sink's phases, its reference (bench/references/, see SinkReference) loads the same rows
 * and changes into the same server the fastest ordinary way, timed the same way.
 *
 * `npm run bench:sinks`; `SINKS_ROWS=20000 SINKS_CHANGES=4000 npm run bench:sinks` is a quick run.
 */

function intEnv(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text.replaceAll('_', ''));
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name} must be an integer of at least ${min}, got '${text}'`);
  return value;
}

const ROWS = intEnv('SINKS_ROWS', 1_000_000, 1);
const CHANGES = intEnv('SINKS_CHANGES', 200_000, 2);
const TIMEOUT_MS = intEnv('SINKS_TIMEOUT_S', 1200, 1) * 1000;
const SYNC_COMMIT = process.env.SINKS_SYNCHRONOUS_COMMIT;
const RUNS = intEnv('SINKS_RUNS', 1, 1);
const KINDS = (process.env.SINKS ?? SINK_KINDS.join(',')).split(',').map((s) => s.trim()) as SinkKind[];
for (const kind of KINDS)
  if (!SINK_KINDS.includes(kind)) throw new Error(`SINKS: '${kind}' is not one of ${SINK_KINDS.join(', ')}`);
/** The drain's polls: finer than the snapshot's, as drains take seconds. */
const DRAIN_POLL_MS = 50;
const TEMPLATE = 'sinks_template';

const log = (message: string) => console.log(`[sinks ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** The backlog: `transactions` transactions of one UPDATE of an existing row, then one INSERT. */
function backlogWorkload(shape: RunShape): Workload {
  const n = shape.rows;
  // 7919 is prime: the rows updated are distinct as long as there are fewer transactions than rows.
  const row = (k: string) =>
    `${k}, md5(${k}::text), (${k} * 7919) % 1000003, timestamptz '2024-01-01 00:00:00+00' + ${k} * interval '1.234567 seconds', ((${k} * 31) % 10000000) / 100.0`;
  return {
    kind: 'single',
    label: `${shape.transactions.toLocaleString('en-US')} transactions of one update and one insert`,
    rows: n + shape.transactions,
    transactions: shape.transactions,
    events: backlogChanges(shape),
    sql: `DO $$ BEGIN FOR k IN 1..${shape.transactions} LOOP
  UPDATE ${SNAPSHOT_TABLE} SET b = b + 1, c = c + interval '1.5 seconds', d = d + 1 WHERE id = ((k - 1)::bigint * 7919) % ${n} + 1;
  INSERT INTO ${SNAPSHOT_TABLE} VALUES (${row(`(${n} + k)::bigint`)});
  COMMIT;
END LOOP; END $$`,
  };
}

interface Pids {
  source: number;
  store: number;
  sink: Record<SinkKind, number | undefined>;
}

function cpuNow(pids: Pids, kind: SinkKind): Cpu {
  const sinkPid = pids.sink[kind];
  return {
    service: treeCpuSeconds('self'),
    source: treeCpuSeconds(pids.source),
    sink: sinkPid === undefined ? Number.NaN : treeCpuSeconds(sinkPid),
    store: treeCpuSeconds(pids.store),
  };
}
const cpuDiff = (a: Cpu, b: Cpu): Cpu => ({
  service: b.service - a.service,
  source: b.source - a.source,
  sink: b.sink - a.sink,
  store: b.store - a.store,
});

const pipelineFailed = async (service: TestService, name: string) => {
  const pipeline = await call(service, 'GET', `/v1/pipelines/${name}`);
  if (pipeline.state === 'failed') throw new Error(`pipeline ${name} failed: ${pipeline.error}`);
};

/** One sink: a fresh source database from the template, the snapshot, then the drain. */
async function runSink(
  kind: SinkKind,
  o: {
    service: TestService;
    source: PgCluster;
    sinkPg: PgCluster;
    shape: RunShape;
    sourceDigest: Digest;
    pids: Pids;
    dataDir: string;
    /** The template database: the snapshot's rows alone. */
    templateUrl: string;
  },
): Promise<SinkResult> {
  const { service, shape, pids } = o;
  const srcName = `sinks_src_${kind}`;
  await sqlOn(o.source.adminUrl, `DROP DATABASE IF EXISTS "${srcName}" WITH (FORCE)`);
  await sqlOn(o.source.adminUrl, `CREATE DATABASE "${srcName}" TEMPLATE "${TEMPLATE}"`);
  const srcUrl = new URL(o.source.adminUrl);
  srcUrl.pathname = `/${srcName}`;
  const sourceUrl = srcUrl.toString();
  const target: SinkTarget = await sinkTarget(
    kind,
    { sinkAdminUrl: o.sinkPg.adminUrl, dataDir: o.dataDir },
    shape,
  );
  if (target.serverPid !== undefined) pids.sink[kind] = target.serverPid;
  const name = `sinks-${kind}`;
  let pipelineId: string | undefined;
  let made = { src: false, dst: false, pipeline: false };
  const teardown = async () => {
    if (made.pipeline) await call(service, 'DELETE', `/v1/pipelines/${name}`);
    if (made.dst) await call(service, 'DELETE', `/v1/connections/${name}-dst`);
    if (made.src) await call(service, 'DELETE', `/v1/connections/${name}-src`);
    made = { src: false, dst: false, pipeline: false };
    await target.cleanUp(pipelineId);
    await sqlOn(o.source.adminUrl, `DROP DATABASE IF EXISTS "${srcName}" WITH (FORCE)`);
  };
  let tornDown = false;
  cleanups.push({ what: `${kind} sink run`, run: () => (tornDown ? undefined : teardown()) });
  try {
    await call(service, 'POST', '/v1/connections', { name: `${name}-src`, type: 'postgres', dsn: sourceUrl });
    made.src = true;
    await call(service, 'POST', '/v1/connections', { name: `${name}-dst`, type: kind, dsn: target.dsn });
    made.dst = true;
    const created = await call(service, 'POST', '/v1/pipelines', {
      name,
      source: { connection: `${name}-src`, tables: [SNAPSHOT_TABLE] },
      sink: { connection: `${name}-dst`, properties: target.properties },
    });
    made.pipeline = true;
    pipelineId = created.id;

    // Snapshot: from the start until the progress shows streaming.
    await Promise.all([sqlOn(o.source.adminUrl, 'CHECKPOINT'), sqlOn(o.sinkPg.adminUrl, 'CHECKPOINT')]);
    const snapLoad = loadavg()[0] ?? 0;
    log(
      `${kind}: pipeline ${pipelineId}; snapshot of ${shape.rows.toLocaleString('en-US')} rows into ${target.where}`,
    );
    const snapCpu = cpuNow(pids, kind);
    let partitions = 0;
    let polls = 0;
    const snapStarted = performance.now();
    await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
    const snapSeconds = await secondsUntil(
      snapStarted,
      async () => {
        const progress = await call(service, 'GET', `/v1/pipelines/${name}/progress`);
        const tables: { status: string; partitions_total: number }[] = progress.tables;
        partitions = tables.reduce((sum, t) => sum + t.partitions_total, 0);
        if (
          progress.phase === 'streaming' ||
          (tables.length > 0 && tables.every((t) => t.status === 'streaming'))
        )
          return true;
        if (++polls % 10 === 0) await pipelineFailed(service, name);
        return false;
      },
      `${kind}: the snapshot`,
      TIMEOUT_MS,
    );
    // Backends that just ended are counted once their postmaster has reaped them.
    await sleep(500);
    const snapshotCpu = cpuDiff(snapCpu, cpuNow(pids, kind));
    const snapshotCheck = await target.checkSnapshot(o.sourceDigest);
    log(
      `  ${secs(snapSeconds)} s, ${rate(shape.rows / snapSeconds)} rows/s; ${snapshotCheck.ok ? '' : 'CHECK FAILED: '}${snapshotCheck.detail}`,
    );
    if (!snapshotCheck.ok)
      throw new Error(`${kind}: the snapshot differs from the source: ${snapshotCheck.detail}`);

    // Drain: paused, the backlog written, then resumed and timed until the sink holds all of it.
    const slot = await slotOf(sourceUrl);
    await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'pause' });
    await waitSlotInactive(sourceUrl, slot);
    const workload = backlogWorkload(shape);
    log(
      `${kind}: paused; writing ${backlogChanges(shape).toLocaleString('en-US')} changes (${workload.label})`,
    );
    const writeSeconds = await writeBacklog(sourceUrl, workload);
    const [wal] = await sqlOn<{ bytes: string }>(
      sourceUrl,
      'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) AS bytes FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    );
    const after = await pgDigest(sourceUrl);
    if (after.rows !== shape.rows + shape.transactions)
      throw new Error(
        `${kind}: the backlog left ${after.rows} rows, expected ${shape.rows + shape.transactions}`,
      );
    await target.markDrainStart();
    const expected = backlogChanges(shape);
    if ((await target.drainedChanges()) !== 0)
      throw new Error(`${kind}: the sink holds backlog changes before the resume`);
    await sqlOn(o.source.adminUrl, 'CHECKPOINT');
    const drainLoad = loadavg()[0] ?? 0;
    const drainCpu = cpuNow(pids, kind);
    const drainStarted = performance.now();
    await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'resume' });
    let startup: number | undefined;
    let drainSeconds: number;
    polls = 0;
    for (;;) {
      const seen = await target.drainedChanges();
      const elapsed = (performance.now() - drainStarted) / 1000;
      if (seen > 0) startup ??= elapsed;
      if (seen >= expected) {
        drainSeconds = elapsed;
        if (seen > expected) log(`  ${kind}: ${seen} changes seen, more than the ${expected} written`);
        break;
      }
      if (elapsed * 1000 > TIMEOUT_MS)
        throw new Error(`${kind}: drain not done after ${elapsed.toFixed(0)} s (${seen} of ${expected})`);
      if (++polls % 20 === 0) await pipelineFailed(service, name);
      await sleep(DRAIN_POLL_MS);
    }
    await sleep(500);
    const drainCpuUsed = cpuDiff(drainCpu, cpuNow(pids, kind));
    const drainCheck = await target.checkDrain(after);
    const metrics = await call(service, 'GET', `/v1/pipelines/${name}/metrics`);
    log(
      `  drained in ${secs(drainSeconds)} s (first change after ${secs(startup ?? drainSeconds)} s), ` +
        `${rate(expected / drainSeconds)} changes/s; ${drainCheck.ok ? '' : 'CHECK FAILED: '}${drainCheck.detail}`,
    );
    if (!drainCheck.ok)
      throw new Error(`${kind}: the drain left the sink unlike the source: ${drainCheck.detail}`);
    const factory = SINK_REFERENCES[kind];
    const reference = factory
      ? await runReference(kind, factory(), {
          input: {
            shape,
            snapshotUrl: o.templateUrl,
            backlogUrl: sourceUrl,
            places: { sinkAdminUrl: o.sinkPg.adminUrl, dataDir: o.dataDir },
          },
          pids,
        })
      : undefined;
    return {
      runs: 1,
      ...(reference ? { reference } : {}),
      kind,
      where: target.where,
      snapshot: {
        seconds: snapSeconds,
        load: snapLoad,
        cpu: snapshotCpu,
        check: snapshotCheck.detail,
        partitions,
        parallelism: created.snapshot.parallelism,
        partitionRows: created.snapshot.partition_rows,
      },
      drain: {
        seconds: drainSeconds,
        startupSeconds: startup ?? drainSeconds,
        load: drainLoad,
        cpu: drainCpuUsed,
        check: drainCheck.detail,
        writeSeconds,
        walMiB: Number(wal?.bytes) / 2 ** 20,
      },
      sinkErrors: Number(metrics.sink_errors_total ?? 0),
    };
  } finally {
    tornDown = true;
    await teardown();
  }
}

/** The sink's reference, after the sink's own phases: the same snapshot and backlog, timed alike. */
async function runReference(
  kind: SinkKind,
  reference: SinkReference,
  o: { input: ReferenceInput; pids: Pids },
): Promise<ReferenceResult> {
  let cleaned = false;
  const cleanUp = async () => {
    if (cleaned) return;
    cleaned = true;
    await reference.cleanUp();
  };
  cleanups.push({ what: `${kind} reference`, run: cleanUp });
  try {
    log(`${kind}: reference, ${reference.method}`);
    const timed = async (prepare: () => Promise<void>, load: () => Promise<void>) => {
      await prepare();
      const serverPid = reference.serverPid?.();
      const pids =
        serverPid === undefined ? o.pids : { ...o.pids, sink: { ...o.pids.sink, [kind]: serverPid } };
      const cpu = cpuNow(pids, kind);
      const started = performance.now();
      await load();
      const seconds = (performance.now() - started) / 1000;
      await sleep(500);
      return { seconds, cpu: cpuDiff(cpu, cpuNow(pids, kind)) };
    };
    const snapshot = await timed(
      () => reference.prepareSnapshot(o.input),
      () => reference.loadSnapshot(),
    );
    log(
      `  reference snapshot ${secs(snapshot.seconds)} s, ${rate(o.input.shape.rows / snapshot.seconds)} rows/s`,
    );
    const drain = await timed(
      () => reference.prepareDrain(o.input),
      () => reference.loadDrain(),
    );
    log(
      `  reference drain ${secs(drain.seconds)} s, ${rate(backlogChanges(o.input.shape) / drain.seconds)} changes/s`,
    );
    return { method: reference.method, snapshot, drain };
  } finally {
    await cleanUp();
  }
}

async function main(): Promise<void> {
  const date = new Date();
  const code = codeVersion();
  const shape: RunShape = { rows: ROWS, transactions: Math.max(1, Math.round(CHANGES / 2)) };
  const { binDir } = availableBinDirs()[0] as { binDir: string };
  log(
    `${shape.rows.toLocaleString('en-US')} rows, ${backlogChanges(shape).toLocaleString('en-US')} changes; sinks ${KINDS.join(', ')}`,
  );
  await ensureSinkServers();
  const servers: SinkServers = await sinkServers();
  const source = await startPgCluster(
    'sinks-source',
    binDir,
    // PostgreSQL's default is the whole of it: a commit waits for its WAL to reach the disk.
    SYNC_COMMIT === 'on'
      ? ['synchronous_commit=on', 'fsync=on', 'full_page_writes=on']
      : SYNC_COMMIT
        ? [`synchronous_commit=${SYNC_COMMIT}`]
        : [],
  );
  cleanups.push({ what: 'source cluster', run: source.stop });
  const sinkPg = await startPgCluster('sinks-sink', binDir);
  cleanups.push({ what: 'sink cluster', run: sinkPg.stop });
  const storePg = await startPgCluster('sinks-store', binDir);
  cleanups.push({ what: 'store cluster', run: storePg.stop });
  const machine = await machineInfo(source.adminUrl);
  const [setting] = await sqlOn<{ v: string }>(
    source.adminUrl,
    "SELECT current_setting('synchronous_commit') AS v",
  );
  const syncCommit = setting?.v ?? 'unknown';
  log(`source synchronous_commit=${syncCommit}; 1-minute load average ${machine.load.toFixed(2)}`);

  const config = {
    ...testConfig(await createDatabase(storePg.adminUrl, 'replicator_store')),
    log: { level: 'warn' as const, format: 'json' as const },
  };
  // The webhook sink's receiver is on loopback, which a webhook may reach only with this setting.
  config.connections.webhookAllowPrivate = true;
  cleanups.push({
    what: 'service data dir',
    run: () => rmSync(config.dataDir, { recursive: true, force: true }),
  });
  const service = await startTestService(config);
  cleanups.push({ what: 'service', run: service.stop });

  log(`filling the template source table with ${shape.rows.toLocaleString('en-US')} rows`);
  const template = await fillSnapshotTable(await createDatabase(source.adminUrl, TEMPLATE), shape.rows);
  const sourceDigest = await pgDigest(template.url);
  log(
    `  filled in ${template.fillSeconds.toFixed(1)} s: ${(template.tableBytes / 2 ** 20).toFixed(0)} MiB on disk`,
  );

  const pids: Pids = {
    source: await postmasterPid(source.adminUrl),
    store: await postmasterPid(storePg.adminUrl),
    sink: {
      postgres: await postmasterPid(sinkPg.adminUrl),
      mysql: servers.mariadb.pid,
      redis: servers.redis.pid,
      nats: servers.nats.pid,
      rabbitmq: servers.rabbitmq.pid,
      // DuckDB runs in this process: its CPU is in the service's figure.
      duckdb: undefined,
      // The webhook receiver is a process its target starts (SinkTarget.serverPid).
      webhook: undefined,
    },
  };
  const results: SinkResult[] = [];
  for (const kind of KINDS) {
    const runs: SinkResult[] = [];
    for (let run = 1; run <= RUNS; run++) {
      if (RUNS > 1) log(`${kind}: run ${run} of ${RUNS}`);
      runs.push(
        await runSink(kind, {
          service,
          source,
          sinkPg,
          shape,
          sourceDigest,
          pids,
          dataDir: config.dataDir,
          templateUrl: template.url,
        }),
      );
    }
    results.push(medianResult(runs));
  }

  const settings = [
    ROWS === 1_000_000 ? '' : `SINKS_ROWS=${ROWS}`,
    CHANGES === 200_000 ? '' : `SINKS_CHANGES=${CHANGES}`,
    process.env.SINKS ? `SINKS=${process.env.SINKS}` : '',
    SYNC_COMMIT ? `SINKS_SYNCHRONOUS_COMMIT=${SYNC_COMMIT}` : '',
    RUNS === 1 ? '' : `SINKS_RUNS=${RUNS}`,
  ].filter(Boolean);
  const report: SinksReport = {
    date,
    code,
    command: [...settings, 'npm run bench:sinks'].join(' '),
    machine,
    servers,
    syncCommit,
    shape,
    tableMiB: template.tableBytes / 2 ** 20,
    runs: RUNS,
    results,
  };
  console.log(`\n${sinksSummaryTable(report)}\n\n${sinksDetailTable(report)}\n`);
  const path = join(process.cwd(), 'BENCHMARKS.md');
  if (SINK_KINDS.some((kind) => !KINDS.includes(kind))) {
    console.log(`SINKS=${KINDS.join(',')}: only some sinks ran, ${path} is left as it is`);
    return;
  }
  // A run at PostgreSQL's default (`on`) keeps a section of its own beside the harness's fast one.
  writeSection(path, syncCommit === 'on' ? 'sinks-synchronous-commit-on' : 'sinks', sinksMarkdown(report));
  console.log(`report written to ${path}`);
}

await runBenchmark(main, 'sink benchmark');
