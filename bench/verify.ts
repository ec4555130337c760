/**
 * The verification benchmark: `npm run bench:verify`. BENCH_SCALE (default 1: 2,000,000 rows),
 * BENCH_RUNS (default 3), MEMORY_CLI (dist, built first, or tsx). Each run snapshots the table of
 * the snapshot benchmark into a fresh PostgreSQL sink, then verifies it, verifies it again after 10
 * rows were changed by hand in the sink, repairs them, and (first run only) verifies it once more
 * with `source_share: 0.5`. Writes the verification section of BENCHMARKS.md, leaving the rest.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn, tableDigest } from '../test/support/replication-fixture.js';
import { writeSection } from './benchmarks-section.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { secondsUntil } from './poll.js';
import { call, type ServiceClient } from './service-api.js';
import {
  prepareServiceCli,
  processMemory,
  type ServiceCli,
  type ServiceProcess,
  serviceCli,
  startServiceProcess,
} from './service-process.js';
import { fillSnapshotTable, SNAPSHOT_TABLE, SNAPSHOT_TABLE_DDL, snapshotRows } from './snapshot-table.js';
import { verifyMarkdown, verifySummaryTable, verifyTargets } from './verify-report.js';
import { benchRuns, benchScale } from './workloads.js';

const log = (message: string) => console.log(`[verify ${new Date().toISOString().slice(11, 19)}] ${message}`);
const MiB = 1024; // KiB per MiB
const TIMEOUT_MS = 900_000;
const NAME = 'verify-bench';
const SAMPLE_MS = 100;

/** One verification as timed here and as the service reports it. */
export interface TimedVerification {
  id: string;
  /** From `POST .../verify` until `GET .../verifications/{id}` shows `completed` (polled every 100 ms). */
  wallSeconds: number;
  /** The service's `duration_ms` (started_at to finished_at), in seconds. */
  serviceSeconds: number;
  rowsRead: number;
  result: string;
  missing: number;
  extra: number;
  changed: number;
  unsettled: number;
  /** The tables' reasons, if any (a table not verified says why). */
  reason?: string;
}

/** Where a verification's time went, from pg_stat_activity sampled every 100 ms on both clusters. */
export interface TimeSplit {
  samples: number;
  /** Share of the samples with the verification's checksum query running on the source, then on the sink. */
  sourceChecksum: number;
  sinkChecksum: number;
  /** Any other query of the verification (split points, row hashes) on either side. */
  otherQuery: number;
  /** Neither side running a query of the verification: waits for the sink's durable position, the engine. */
  idle: number;
  /** One of the checksum queries as the source ran it. */
  sourceSql?: string;
  sinkSql?: string;
}

/** The engine's checksum query over the whole table, run by hand on each side, and a plain count(*). */
export interface HandTimings {
  sourceChecksum: number;
  sinkChecksum: number;
  sourceCount: number;
  sinkCount: number;
  /** Both checksums at once, each on its own server. */
  bothAtOnce: number;
}

export interface VerifyRun {
  run: number;
  /** 1-minute load average before the run. */
  load: number;
  rows: number;
  /** Our snapshot: PUT state start until the progress shows the phase streaming. */
  snapshotSeconds: number;
  /** VmHWM of the service process that took the snapshot. */
  snapshotPeakMiB: number;
  /** VmRSS of the fresh service process once it streams, before the first verification. */
  restMiB: number;
  matched: TimedVerification;
  split: TimeSplit;
  differs: TimedVerification;
  /** POST repair until repair.status is completed; the follow-up verification not counted. */
  repairSeconds: number;
  followUp: TimedVerification;
  /** POST repair until the progress shows the table streaming again. */
  streamingAgainSeconds: number;
  /** When the follow-up did not match: a verification asked by hand once the table streams again. */
  afterRepair?: TimedVerification;
  /** First run only: a verification of the matching table with source_share 0.5. */
  shared?: TimedVerification;
  /** First run only: the checksum SQL timed by hand. */
  hand?: HandTimings;
  /** VmHWM of the fresh process at the end of the verifications and the repair. */
  verifyPeakMiB: number;
  /** Highest VmRSS sampled (every 100 ms) during the verifications and the repair. */
  verifySampledPeakMiB: number;
}

export interface VerifyResults {
  rows: number;
  runs: VerifyRun[];
  postgres: string;
  cli: ServiceCli;
  tableMiB: number;
  differences: { changed: string[]; missing: string[]; extra: string[] };
}

/** The 10 differences made by hand in the sink: ids spread over the table. */
export function differenceIds(rows: number) {
  const at = (f: number) => String(Math.max(1, Math.round(rows * f)));
  return {
    changed: [0.05, 0.25, 0.55, 0.85].map(at),
    missing: [0.15, 0.45, 0.75].map(at),
    // Deleted from the source before the pipeline starts, inserted in the sink by hand.
    extra: [0.35, 0.65, 0.95].map(at),
  };
}

async function verification(service: ServiceClient, id: string): Promise<TimedVerification> {
  const v = await call(service, 'GET', `/v1/pipelines/${NAME}/verifications/${id}`);
  const sum = (k: string) =>
    (v.tables as Record<string, number>[]).reduce((total, t) => total + Number(t[k] ?? 0), 0);
  return {
    id,
    wallSeconds: 0,
    serviceSeconds: Number(v.duration_ms) / 1000,
    rowsRead: Number(v.rows_read),
    result: String(v.result),
    missing: sum('missing'),
    extra: sum('extra'),
    changed: sum('changed'),
    unsettled: sum('unsettled'),
  };
}

async function untilEnded(service: ServiceClient, id: string, started: number): Promise<number> {
  return secondsUntil(
    started,
    async () => {
      const v = await call(service, 'GET', `/v1/pipelines/${NAME}/verifications/${id}`);
      if (v.status === 'failed' || v.status === 'cancelled')
        throw new Error(`verification ${id} ${v.status}: ${v.error}`);
      return v.status === 'completed';
    },
    `verification ${id}`,
    TIMEOUT_MS,
  );
}

async function timedVerify(service: ServiceClient, body: unknown): Promise<TimedVerification> {
  const started = performance.now();
  const accepted = await call(service, 'POST', `/v1/pipelines/${NAME}/verify`, body);
  const wallSeconds = await untilEnded(service, accepted.id, started);
  return { ...(await verification(service, accepted.id)), wallSeconds };
}

/** Samples what the service's sessions run on the source and the sink, every 100 ms. */
async function activitySampler(sourceUrl: string, sinkUrl: string) {
  const clients = [
    new pg.Client({ connectionString: sourceUrl }),
    new pg.Client({ connectionString: sinkUrl }),
  ];
  await Promise.all(clients.map((c) => c.connect()));
  const sql = `SELECT query FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
       AND backend_type = 'client backend'`;
  const split: TimeSplit = { samples: 0, sourceChecksum: 0, sinkChecksum: 0, otherQuery: 0, idle: 0 };
  const isChecksum = (q: string) => /^\s*SELECT count\(\*\), sum\(/i.test(q);
  let running = true;
  const loop = (async () => {
    while (running) {
      const next = performance.now() + SAMPLE_MS;
      const [source, sink] = await Promise.all(
        clients.map(async (c) => (await c.query<{ query: string }>(sql)).rows.map((r) => r.query)),
      );
      split.samples++;
      if (source?.some(isChecksum)) {
        split.sourceChecksum++;
        split.sourceSql ??= source.find(isChecksum);
      } else if (sink?.some(isChecksum)) {
        split.sinkChecksum++;
        split.sinkSql ??= sink.find(isChecksum);
      } else if ((source?.length ?? 0) + (sink?.length ?? 0) > 0) split.otherQuery++;
      else split.idle++;
      const rest = next - performance.now();
      if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    }
  })();
  return async (): Promise<TimeSplit> => {
    running = false;
    await loop;
    await Promise.all(clients.map((c) => c.end()));
    const n = Math.max(1, split.samples);
    return {
      ...split,
      sourceChecksum: split.sourceChecksum / n,
      sinkChecksum: split.sinkChecksum / n,
      otherQuery: split.otherQuery / n,
      idle: split.idle / n,
    };
  };
}

/** A checksum query as the engine ran it, over the whole table instead of its range. */
const wholeTable = (sql: string) => `${sql.slice(0, sql.lastIndexOf(' WHERE '))} WHERE TRUE`;

async function timeSql(url: string, sql: string): Promise<number> {
  const started = performance.now();
  await sqlOn(url, sql);
  return (performance.now() - started) / 1000;
}

async function handTimings(
  sourceUrl: string,
  sinkUrl: string,
  split: TimeSplit,
): Promise<HandTimings | undefined> {
  // pg_stat_activity keeps the first track_activity_query_size (1024) bytes of a query.
  const whole = (sql?: string) => sql && sql.length < 1000 && sql.includes(' WHERE ');
  if (!whole(split.sourceSql) || !whole(split.sinkSql)) return undefined;
  const source = wholeTable(split.sourceSql as string);
  const sink = wholeTable(split.sinkSql as string);
  const count = `SELECT count(*) FROM ${SNAPSHOT_TABLE}`;
  const hand = {
    sourceCount: await timeSql(sourceUrl, count),
    sinkCount: await timeSql(sinkUrl, count),
    sourceChecksum: await timeSql(sourceUrl, source),
    sinkChecksum: await timeSql(sinkUrl, sink),
    bothAtOnce: 0,
  };
  const started = performance.now();
  await Promise.all([sqlOn(sourceUrl, source), sqlOn(sinkUrl, sink)]);
  hand.bothAtOnce = (performance.now() - started) / 1000;
  return hand;
}

/** The service's peak VmRSS sampled every 100 ms, until stopped. */
function rssSampler(pid: number) {
  let peak = 0;
  const sample = () => {
    peak = Math.max(peak, processMemory(pid)?.rssKiB ?? 0);
  };
  sample();
  const timer = setInterval(sample, SAMPLE_MS);
  return () => {
    sample();
    clearInterval(timer);
    return peak / MiB;
  };
}

async function waitStreaming(service: ServiceClient, what: string): Promise<number> {
  let polls = 0;
  return secondsUntil(
    performance.now(),
    async () => {
      if (++polls % 10 === 0) {
        const pipeline = await call(service, 'GET', `/v1/pipelines/${NAME}`);
        if (pipeline.state === 'failed') throw new Error(`pipeline ${NAME} failed: ${pipeline.error}`);
      }
      const progress = await call(service, 'GET', `/v1/pipelines/${NAME}/progress`).catch(() => undefined);
      if (!progress) return false;
      const tables: { status: string }[] = progress.tables ?? [];
      return (
        progress.phase === 'streaming' || (tables.length > 0 && tables.every((t) => t.status === 'streaming'))
      );
    },
    what,
    TIMEOUT_MS,
  );
}

async function withService<T>(
  store: string,
  cli: ServiceCli,
  dataDir: string,
  body: (s: ServiceProcess) => Promise<T>,
): Promise<T> {
  const service = await startServiceProcess(store, cli, { dataDir });
  try {
    return await body(service);
  } catch (error) {
    log(`  service output, last lines:\n${service.output().split('\n').slice(-20).join('\n')}`);
    throw error;
  } finally {
    await service.stop();
  }
}

async function oneRun(o: {
  run: number;
  sourceUrl: string;
  sinkAdminUrl: string;
  rows: number;
  cli: ServiceCli;
  withShare: boolean;
}): Promise<VerifyRun> {
  const { run, sourceUrl, rows, cli } = o;
  const [sinkUrl, store] = await Promise.all([
    createDatabase(o.sinkAdminUrl, `verify_sink_${run}`),
    createDatabase(o.sinkAdminUrl, `verify_store_${run}`),
  ]);
  await sqlOn(sinkUrl, SNAPSHOT_TABLE_DDL);
  await Promise.all([sqlOn(sourceUrl, 'CHECKPOINT'), sqlOn(o.sinkAdminUrl, 'CHECKPOINT')]);
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-bench-verify-'));
  const load = loadavg()[0] ?? 0;
  try {
    // The snapshot, in a service process of its own.
    const { snapshotSeconds, snapshotPeakMiB } = await withService(store, cli, dataDir, async (service) => {
      await call(service, 'POST', '/v1/connections', {
        name: `${NAME}-src`,
        type: 'postgres',
        dsn: sourceUrl,
      });
      await call(service, 'POST', '/v1/connections', { name: `${NAME}-dst`, type: 'postgres', dsn: sinkUrl });
      await call(service, 'POST', '/v1/pipelines', {
        name: NAME,
        source: { connection: `${NAME}-src`, tables: [SNAPSHOT_TABLE] },
        sink: { connection: `${NAME}-dst`, properties: {} },
      });
      const started = performance.now();
      await call(service, 'PUT', `/v1/pipelines/${NAME}/state`, { state: 'start' });
      await waitStreaming(service, 'the snapshot');
      const snapshotSeconds = (performance.now() - started) / 1000;
      return { snapshotSeconds, snapshotPeakMiB: (processMemory(service.pid)?.hwmKiB ?? Number.NaN) / MiB };
    });
    log(
      `  run ${run}: snapshot ${snapshotSeconds.toFixed(2)} s (its process's peak ${snapshotPeakMiB.toFixed(0)} MiB)`,
    );
    // The verifications and the repair, in a fresh process on the same store and data directory.
    return await withService(store, cli, dataDir, async (service) => {
      await waitStreaming(service, 'the pipeline to stream again in the fresh process');
      const restMiB = (processMemory(service.pid)?.rssKiB ?? 0) / MiB;
      const peak = rssSampler(service.pid);

      const activity = await activitySampler(sourceUrl, sinkUrl);
      const matched = await timedVerify(service, {});
      const split = await activity();
      log(
        `  matched: ${matched.wallSeconds.toFixed(2)} s (service ${matched.serviceSeconds.toFixed(2)} s), ` +
          `${matched.rowsRead.toLocaleString('en-US')} rows read, ${matched.result}; ` +
          `source checksums ${(split.sourceChecksum * 100).toFixed(0)} %, sink checksums ${(split.sinkChecksum * 100).toFixed(0)} %, ` +
          `other queries ${(split.otherQuery * 100).toFixed(0)} %, no query ${(split.idle * 100).toFixed(0)} %`,
      );
      if (matched.result !== 'matched') throw new Error(`the first verification found ${matched.result}`);

      const ids = differenceIds(rows);
      await sqlOn(
        sinkUrl,
        `UPDATE ${SNAPSHOT_TABLE} SET b = b + 1 WHERE id IN (${ids.changed.join(', ')});
         DELETE FROM ${SNAPSHOT_TABLE} WHERE id IN (${ids.missing.join(', ')});
         INSERT INTO ${SNAPSHOT_TABLE} (id, a, b) VALUES ${ids.extra.map((id) => `(${id}, 'stray', 0)`).join(', ')}`,
      );
      const differs = await timedVerify(service, {});
      log(
        `  10 differences: ${differs.wallSeconds.toFixed(2)} s (service ${differs.serviceSeconds.toFixed(2)} s), ` +
          `${differs.rowsRead.toLocaleString('en-US')} rows read; changed ${differs.changed}, missing ${differs.missing}, extra ${differs.extra}`,
      );
      const found = await call(service, 'GET', `/v1/pipelines/${NAME}/verifications/${differs.id}`);
      const keys = (found.tables as { sample_keys: { kind: string; key: { id: string } }[] }[])
        .flatMap((t) => t.sample_keys)
        .map((s) => `${s.kind}:${s.key.id}`)
        .sort();
      const expected = [
        ...ids.changed.map((id) => `changed:${id}`),
        ...ids.missing.map((id) => `missing:${id}`),
        ...ids.extra.map((id) => `extra:${id}`),
      ].sort();
      if (differs.result !== 'differs' || JSON.stringify(keys) !== JSON.stringify(expected))
        throw new Error(
          `the verification found ${JSON.stringify(keys)}, expected ${JSON.stringify(expected)}`,
        );

      const repairStarted = performance.now();
      await call(service, 'POST', `/v1/pipelines/${NAME}/verifications/${differs.id}/repair`);
      let followUpId = '';
      const repairSeconds = await secondsUntil(
        repairStarted,
        async () => {
          const v = await call(service, 'GET', `/v1/pipelines/${NAME}/verifications/${differs.id}`);
          if (v.repair?.status === 'failed') throw new Error(`the repair failed: ${v.repair.error}`);
          followUpId = v.repair?.verification_id ?? '';
          return v.repair?.status === 'completed';
        },
        'the repair',
        TIMEOUT_MS,
      );
      if (!followUpId) throw new Error('the repair named no follow-up verification');
      const followUpWall = await untilEnded(service, followUpId, performance.now());
      const followUp = { ...(await verification(service, followUpId)), wallSeconds: followUpWall };
      const followUpView = await call(service, 'GET', `/v1/pipelines/${NAME}/verifications/${followUpId}`);
      followUp.reason = (followUpView.tables as { reason?: string }[]).map((t) => t.reason ?? '').join('; ');
      // Until the repaired table streams again (a repair marks it backfill meanwhile).
      const streamingAgainSeconds = await secondsUntil(
        repairStarted,
        async () => {
          const progress = await call(service, 'GET', `/v1/pipelines/${NAME}/progress`);
          return (progress.tables as { status: string }[]).every((t) => t.status === 'streaming');
        },
        'the repaired table to stream again',
        TIMEOUT_MS,
      );
      log(
        `  repair ${repairSeconds.toFixed(2)} s (table streaming again after ${streamingAgainSeconds.toFixed(2)} s); ` +
          `follow-up verification ${followUp.wallSeconds.toFixed(2)} s: ${followUp.result}${followUp.reason ? ` (${followUp.reason})` : ''}`,
      );
      let afterRepair = followUp;
      if (followUp.result !== 'matched') {
        afterRepair = await timedVerify(service, {});
        log(
          `  verification after the repair, asked by hand: ${afterRepair.wallSeconds.toFixed(2)} s: ${afterRepair.result}`,
        );
      }
      if (afterRepair.result !== 'matched')
        throw new Error(`after the repair the verification found ${afterRepair.result}`);

      let shared: TimedVerification | undefined;
      if (o.withShare) {
        shared = await timedVerify(service, { source_share: 0.5 });
        log(
          `  source_share 0.5: ${shared.wallSeconds.toFixed(2)} s (service ${shared.serviceSeconds.toFixed(2)} s)`,
        );
      }
      const verifySampledPeakMiB = peak();
      const verifyPeakMiB = (processMemory(service.pid)?.hwmKiB ?? Number.NaN) / MiB;
      log(
        `  peak RSS (VmHWM) of the verifying process ${verifyPeakMiB.toFixed(0)} MiB, at rest ${restMiB.toFixed(0)} MiB`,
      );

      const [a, b] = await Promise.all([
        tableDigest(sourceUrl, SNAPSHOT_TABLE, 'id'),
        tableDigest(sinkUrl, SNAPSHOT_TABLE, 'id'),
      ]);
      if (a.md5 !== b.md5) throw new Error('after the repair the sink differs from the source');
      await call(service, 'DELETE', `/v1/pipelines/${NAME}`);
      const hand = o.withShare
        ? await handTimings(sourceUrl, sinkUrl, split).catch((error) => {
            log(`  the checksum queries could not be timed by hand: ${error}`);
            return undefined;
          })
        : undefined;
      if (hand)
        log(
          `  by hand, whole table: checksum source ${hand.sourceChecksum.toFixed(2)} s, sink ${hand.sinkChecksum.toFixed(2)} s, ` +
            `both at once ${hand.bothAtOnce.toFixed(2)} s; count(*) source ${hand.sourceCount.toFixed(2)} s, sink ${hand.sinkCount.toFixed(2)} s`,
        );
      return {
        ...(hand ? { hand } : {}),
        run,
        load,
        rows: a.rows,
        snapshotSeconds,
        snapshotPeakMiB,
        restMiB,
        matched,
        split,
        differs,
        repairSeconds,
        followUp,
        streamingAgainSeconds,
        ...(afterRepair === followUp ? {} : { afterRepair }),
        ...(shared ? { shared } : {}),
        verifyPeakMiB,
        verifySampledPeakMiB,
      };
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await Promise.all([
      sqlOn(o.sinkAdminUrl, `DROP DATABASE IF EXISTS verify_sink_${run} WITH (FORCE)`),
      sqlOn(o.sinkAdminUrl, `DROP DATABASE IF EXISTS verify_store_${run} WITH (FORCE)`),
    ]);
  }
}

async function main(): Promise<void> {
  const scale = benchScale();
  const runs = benchRuns();
  const cli = serviceCli();
  const date = new Date();
  const { binDir } = availableBinDirs()[0] as { binDir: string };
  log(`scale ${scale}, ${runs} runs; starting source and sink PostgreSQL from ${binDir}`);
  const source = await startPgCluster('verify-source', binDir);
  cleanups.push({ what: 'source cluster', run: source.stop });
  const sink = await startPgCluster('verify-sink', binDir);
  cleanups.push({ what: 'sink cluster', run: sink.stop });
  await prepareServiceCli(cli, log);
  const [version] = await sqlOn<{ v: string }>(
    source.adminUrl,
    "SELECT current_setting('server_version') AS v",
  );

  const rows = snapshotRows(scale);
  log(`filling the source table with ${rows.toLocaleString('en-US')} rows`);
  const filled = await fillSnapshotTable(await createDatabase(source.adminUrl, 'verify_src'), rows);
  const differences = differenceIds(rows);
  // The extra rows' ids: absent from the source, so the sink's rows of them are extra.
  await sqlOn(filled.url, `DELETE FROM ${SNAPSHOT_TABLE} WHERE id IN (${differences.extra.join(', ')})`);
  await sqlOn(filled.url, `VACUUM (ANALYZE) ${SNAPSHOT_TABLE}`);
  log(`  filled in ${filled.fillSeconds.toFixed(1)} s, ${(filled.tableBytes / 2 ** 20).toFixed(0)} MiB`);

  const results: VerifyRun[] = [];
  for (let run = 1; run <= runs; run++) {
    log(`run ${run}/${runs}; 1-minute load average ${(loadavg()[0] ?? 0).toFixed(2)}`);
    results.push(
      await oneRun({
        run,
        sourceUrl: filled.url,
        sinkAdminUrl: sink.adminUrl,
        rows,
        cli,
        withShare: run === 1,
      }),
    );
  }
  const out: VerifyResults = {
    rows,
    runs: results,
    postgres: version?.v ?? 'unknown',
    cli,
    tableMiB: filled.tableBytes / 2 ** 20,
    differences,
  };
  console.log(`\n${verifySummaryTable(out)}\n`);
  console.log(verifyTargets(out).join('\n'));
  const path = join(process.cwd(), 'BENCHMARKS.md');
  const settings = [scale === 1 ? '' : `BENCH_SCALE=${scale}`, runs === 3 ? '' : `BENCH_RUNS=${runs}`];
  writeSection(
    path,
    'verify',
    verifyMarkdown(out, date, [...settings.filter(Boolean), 'npm run bench:verify'].join(' ')),
  );
  console.log(`verification section written to ${path}`);
}

await runBenchmark(main, 'verification benchmark');
