import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_SNAPSHOT_OPTIONS } from '../src/pipelines/snapshot-options.js';
import { createDatabase } from '../test/support/pg-cluster.js';
import { sqlOn, tableDigest } from '../test/support/replication-fixture.js';
import type { TestService } from '../test/support/service.js';
import { copyPipe, copyPipeTool } from './copy-pipe.js';
import { type CpuSample, cpuSample, cpuUsed, postmasterPid } from './cpu-usage.js';
import { rate } from './report-format.js';
import { nativeSnapshot } from './snapshot-native.js';
import { type OursSnapshot, oursSnapshot } from './snapshot-ours.js';
import {
  fillSnapshotTable,
  SNAPSHOT_TABLE,
  SNAPSHOT_TABLE_DDL,
  type SnapshotSource,
  snapshotRows,
} from './snapshot-table.js';

const TIMEOUT_MS = 240_000;
const CPU_SETTLE_MS = 500;

/** One of the systems that copy the table: ours with some parallelism, the COPY pipe, or native. */
export interface SnapshotSystem {
  kind: 'ours' | 'pipe' | 'native';
  label: string;
  /** Ours only: the `snapshot.parallelism` asked for; undefined = the pipeline's defaults. */
  parallelism?: number;
  /**
   * Ours only: the sink database is left empty and the pipeline creates the table itself (its
   * default), with the primary key built once after the copy instead of row by row.
   */
  createsTarget?: boolean;
}

/** One timed initial copy by one system into an empty sink table. */
export interface SnapshotRun {
  run: number;
  system: SnapshotSystem;
  seconds: number;
  /** 1-minute load average just before this copy. */
  load: number;
  /** CPU seconds used during the copy, sampled around it: its untimed set-up and teardown included. */
  cpu: CpuSample;
  /** Size of the sink's primary key index after the copy. */
  sinkIndexBytes: number;
  /** Ours only. */
  ours?: OursSnapshot;
}

export interface SnapshotResults {
  source: SnapshotSource;
  pipeTool: string;
  systems: SnapshotSystem[];
  results: SnapshotRun[];
}

/**
 * Ours with the default options, then with `parallelism` 2 and 4 where the default is neither (the
 * default follows the machine's cores), then the pipe and native.
 */
export function snapshotSystems(): SnapshotSystem[] {
  const defaults = DEFAULT_SNAPSHOT_OPTIONS.parallelism;
  const explicit = [2, 4].filter((p) => p !== defaults);
  return [
    { kind: 'ours', label: `ours (default options: parallelism ${defaults})` },
    ...explicit.map((p) => ({ kind: 'ours' as const, label: `ours (parallelism ${p})`, parallelism: p })),
    {
      kind: 'ours',
      label: 'ours (default options, creating its target: key built after the copy)',
      createsTarget: true,
    },
    { kind: 'pipe', label: 'COPY pipe' },
    { kind: 'native', label: 'native subscription' },
  ];
}

/** What tells one of our systems from the others, in its pipeline's and its sink database's names. */
const oursVariant = (system: SnapshotSystem) =>
  `${system.parallelism ?? 'default'}${system.createsTarget ? '_creates' : ''}`;

/** One timed copy of the source table by `system` into the empty table of `sinkUrl`. */
async function timeCopy(
  system: SnapshotSystem,
  service: TestService,
  source: SnapshotSource,
  sinkUrl: string,
): Promise<{ seconds: number; ours?: OursSnapshot }> {
  if (system.kind === 'ours') {
    const name = `snapshot-${oursVariant(system)}`;
    const snapshot = system.parallelism === undefined ? undefined : { parallelism: system.parallelism };
    const ours = await oursSnapshot(service, name, source.url, sinkUrl, snapshot, TIMEOUT_MS);
    return { seconds: ours.seconds, ours };
  }
  if (system.kind === 'pipe') {
    const started = performance.now();
    const copied = await copyPipe(source.url, sinkUrl, SNAPSHOT_TABLE);
    const seconds = (performance.now() - started) / 1000;
    if (copied !== source.rows)
      throw new Error(`the COPY pipe copied ${copied} rows, expected ${source.rows}`);
    return { seconds };
  }
  return { seconds: await nativeSnapshot(source.url, sinkUrl, source.rows, TIMEOUT_MS) };
}

const dropDatabase = (adminUrl: string, name: string) =>
  sqlOn(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);

/**
 * The snapshot benchmark: one source table of `snapshotRows(scale)` rows, copied `runs` times by
 * every system, each time into an empty table of a fresh sink database, the order of the systems
 * reversed from one run to the next. Every copy is checked against the source's digest.
 */
export async function runSnapshotBenchmark(options: {
  sourceAdminUrl: string;
  sinkAdminUrl: string;
  service: TestService;
  scale: number;
  runs: number;
  log: (message: string) => void;
}): Promise<SnapshotResults> {
  const { sourceAdminUrl, sinkAdminUrl, service, runs, log } = options;
  const rows = snapshotRows(options.scale);
  log(`snapshot: filling the source table with ${rows.toLocaleString('en-US')} rows`);
  const source = await fillSnapshotTable(await createDatabase(sourceAdminUrl, 'src_snapshot'), rows);
  log(
    `  filled in ${source.fillSeconds.toFixed(1)} s: ${(source.tableBytes / 2 ** 20).toFixed(0)} MiB on disk, ` +
      `${(source.copyBytes / 2 ** 20).toFixed(0)} MiB as COPY text`,
  );
  const pipeTool = await copyPipeTool();
  const [sourcePid, sinkPid] = await Promise.all([
    postmasterPid(sourceAdminUrl),
    postmasterPid(sinkAdminUrl),
  ]);
  const systems = snapshotSystems();
  const results: SnapshotRun[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const system of run % 2 === 1 ? systems : [...systems].reverse()) {
      const db = `sink_snapshot_${system.kind}${system.kind === 'ours' ? oursVariant(system) : ''}`;
      const sinkUrl = await createDatabase(sinkAdminUrl, db);
      if (!system.createsTarget) await sqlOn(sinkUrl, SNAPSHOT_TABLE_DDL);
      // Whatever the previous copy left dirty is written out now, not during this one.
      await Promise.all([sqlOn(sourceAdminUrl, 'CHECKPOINT'), sqlOn(sinkAdminUrl, 'CHECKPOINT')]);
      const load = loadavg()[0] ?? 0;
      log(`snapshot run ${run}/${runs}, ${system.label}`);
      const cpuBefore = cpuSample(sourcePid, sinkPid);
      const { seconds, ours } = await timeCopy(system, service, source, sinkUrl);
      // Backends that just ended are counted once their postmaster has reaped them.
      await sleep(CPU_SETTLE_MS);
      const cpu = cpuUsed(cpuBefore, cpuSample(sourcePid, sinkPid));
      const copy = await tableDigest(sinkUrl, SNAPSHOT_TABLE, 'id');
      if (copy.rows !== rows || copy.md5 !== source.md5) {
        throw new Error(`${system.label}: the sink differs from the source (${copy.rows} rows of ${rows})`);
      }
      const [index] = await sqlOn<{ bytes: string }>(
        sinkUrl,
        `SELECT pg_relation_size(indexrelid) AS bytes FROM pg_index WHERE indrelid = '${SNAPSHOT_TABLE}'::regclass`,
      );
      const sinkIndexBytes = Number(index?.bytes);
      await dropDatabase(sinkAdminUrl, db);
      const rss = ours ? `; maxRSS ${ours.maxRssAfterMiB.toFixed(0)} MiB` : '';
      const cpuText = [cpu.self, cpu.children, cpu.source, cpu.sink].map((c) => c.toFixed(1)).join(' / ');
      log(
        `  ${seconds.toFixed(2)} s, ${rate(rows / seconds)} rows/s, digest equal${rss}; ` +
          `CPU s (this process / psql / source / sink) ${cpuText}`,
      );
      results.push({ run, system, seconds, load, cpu, sinkIndexBytes, ...(ours ? { ours } : {}) });
    }
  }
  return { source, pipeTool, systems, results };
}
