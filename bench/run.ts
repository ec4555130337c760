import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  availableBinDirs,
  createDatabase,
  type PgCluster,
  startPgCluster,
} from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../test/support/service.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { postmasterPid } from './cpu-usage.js';
import { dropDecodeSlots, runDecodeBenchmark } from './decode.js';
import { decodeDetailTable, decodeRatios, decodeSummaryTable } from './decode-report.js';
import { type DrainSource, drainFromSource, type RunRecord } from './drain.js';
import { drainDetailTable, drainSummaryTable, drainTargets } from './drain-report.js';
import { type MemoryResults, memoryOptions, runMemoryBenchmark } from './memory.js';
import { memoryPhaseTable, memorySummaryTable, memoryTargets } from './memory-report.js';
import { codeVersion, machineInfo, writeBenchmarksMd } from './report.js';
import { serviceCli } from './service-process.js';
import { runSnapshotBenchmark, type SnapshotResults } from './snapshot.js';
import { snapshotDetailTable, snapshotSummaryTable, snapshotTargets } from './snapshot-report.js';
import { benchRuns, benchScale } from './workloads.js';

const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

/**
 * The PostgreSQL binaries to drain from: every version the harness has (the embedded one first),
 * or those named in BENCH_SOURCES (`embedded`, `debian-15`, comma-separated).
 */
function drainBinDirs(): { label: string; binDir: string }[] {
  const all = availableBinDirs();
  const wanted = process.env.BENCH_SOURCES?.split(',').map((s) => s.trim());
  if (!wanted) return all;
  const picked = all.filter((d) => wanted.includes(d.label));
  if (picked.length !== wanted.length)
    throw new Error(
      `BENCH_SOURCES: one of ${wanted.join(', ')} is not among ${all.map((d) => d.label).join(', ')}`,
    );
  return picked;
}

async function main(): Promise<void> {
  const scale = benchScale();
  const runs = benchRuns();
  const date = new Date();
  // Read before anything runs: that is the code the service was loaded from.
  const code = codeVersion();
  const { binDir } = availableBinDirs()[0]!;
  log(`scale ${scale}, ${runs} runs; starting source and sink PostgreSQL from ${binDir}`);
  // One after the other, so that a failing second start still leaves the first one to clean up.
  const source = await startPgCluster('bench-source', binDir);
  cleanups.push({ what: 'source cluster', run: source.stop });
  const sink = await startPgCluster('bench-sink', binDir);
  cleanups.push({ what: 'sink cluster', run: sink.stop });
  const machine = await machineInfo(source.adminUrl);
  log(`1-minute load average before the runs: ${machine.load.toFixed(2)}`);

  const store = await createDatabase(sink.adminUrl, 'replicator_store');
  const config = { ...testConfig(store), log: { level: 'warn' as const, format: 'json' as const } };
  cleanups.push({
    what: 'service data dir',
    run: () => rmSync(config.dataDir, { recursive: true, force: true }),
  });
  const service = await startTestService(config);
  cleanups.push({ what: 'service', run: service.stop });

  // BENCH_ONLY=drain: the drains alone, printed and not written to BENCHMARKS.md (a before and
  // after of one change, with BENCH_WORKLOADS and BENCH_SOURCES to narrow them).
  if (process.env.BENCH_ONLY === 'drain') {
    const { results } = await drainAll(service, source, sink, binDir, scale, runs);
    console.log(`\nBacklog drain\n\n${drainSummaryTable(results)}\n\n${drainDetailTable(results)}\n`);
    console.log(drainTargets(results).join('\n'));
    return;
  }

  // BENCH_ONLY=decode: the raw decoding alone, printed and not written to BENCHMARKS.md.
  /** The decoding section on the source cluster, its slots dropped at the end whatever happens. */
  const decodeSection = () => {
    cleanups.push({ what: 'decode slots', run: () => dropDecodeSlots(source.adminUrl) });
    return runDecodeBenchmark({
      sourceAdminUrl: source.adminUrl,
      sinkAdminUrl: sink.adminUrl,
      scale,
      runs,
      log,
    });
  };
  if (process.env.BENCH_ONLY === 'decode') {
    const decode = await decodeSection();
    console.log(`\nDecoding\n\n${decodeSummaryTable(decode)}\n\n${decodeDetailTable(decode)}\n`);
    console.log(decodeRatios(decode).join('\n'));
    return;
  }

  // First, while this process's peak RSS is still the service's at rest: maxRSS only grows, and
  // the drains below take it much higher.
  const snapshot = await runSnapshotBenchmark({
    sourceAdminUrl: source.adminUrl,
    sinkAdminUrl: sink.adminUrl,
    service,
    scale,
    runs,
    log,
  });

  // BENCH_ONLY=snapshot: the snapshot section alone, printed and not written to BENCHMARKS.md.
  if (process.env.BENCH_ONLY === 'snapshot') {
    printSnapshot(snapshot);
    return;
  }

  const drainLoad = loadavg()[0] ?? 0;
  log(`backlog drain; 1-minute load average now ${drainLoad.toFixed(2)}`);
  const [sinkVersion] = await sqlOn<{ v: string }>(
    sink.adminUrl,
    "SELECT current_setting('server_version') AS v",
  );
  const { sources: drainSources, results } = await drainAll(service, source, sink, binDir, scale, runs);

  // Nothing of the service streams now (the drain systems are gone), so this process runs our
  // change stream alone.
  log(`decoding; 1-minute load average now ${(loadavg()[0] ?? 0).toFixed(2)}`);
  const decode = await decodeSection();

  // The memory section runs the service in processes of its own; the one in this process is idle.
  let memory: MemoryResults | undefined;
  if (process.env.BENCH_MEMORY !== 'off') {
    log(`memory; 1-minute load average now ${(loadavg()[0] ?? 0).toFixed(2)}`);
    try {
      memory = await runMemoryBenchmark({
        sourceAdminUrl: source.adminUrl,
        sinkAdminUrl: sink.adminUrl,
        options: memoryOptions(scale, serviceCli()),
        log,
      });
    } catch (error) {
      // The sections before it are still written; the file keeps the memory section it had.
      console.error('memory benchmark failed:', error);
      process.exitCode = 1;
    }
  }

  const peakRssMiB = process.resourceUsage().maxRSS / 1024;
  const settings = [
    scale === 1 ? '' : `BENCH_SCALE=${scale}`,
    runs === 3 ? '' : `BENCH_RUNS=${runs}`,
    process.env.BENCH_SOURCES ? `BENCH_SOURCES=${process.env.BENCH_SOURCES}` : '',
    process.env.BENCH_MEMORY === 'off' ? 'BENCH_MEMORY=off' : '',
  ];
  const command = [...settings.filter(Boolean), 'npm run bench'].join(' ');
  const path = join(process.cwd(), 'BENCHMARKS.md');
  writeBenchmarksMd(path, {
    date,
    command,
    code,
    scale,
    runs,
    machine,
    results,
    drainSources,
    sinkVersion: sinkVersion?.v ?? 'unknown',
    peakRssMiB,
    snapshot,
    drainLoad,
    decode,
    ...(memory ? { memory } : {}),
  });
  printSnapshot(snapshot);
  console.log(`\nBacklog drain\n\n${drainSummaryTable(results)}\n\n${drainDetailTable(results)}\n`);
  console.log(drainTargets(results).join('\n'));
  console.log(`\nDecoding\n\n${decodeSummaryTable(decode)}\n\n${decodeDetailTable(decode)}\n`);
  console.log(decodeRatios(decode).join('\n'));
  if (memory) {
    console.log(`\nMemory\n\n${memorySummaryTable(memory)}\n\n${memoryPhaseTable(memory)}\n`);
    console.log(memoryTargets(memory).join('\n'));
  }
  console.log(`peak RSS of this process: ${peakRssMiB.toFixed(0)} MiB; report written to ${path}`);
}

function printSnapshot(snapshot: SnapshotResults): void {
  console.log(`\nSnapshot\n\n${snapshotSummaryTable(snapshot)}\n\n${snapshotDetailTable(snapshot)}\n`);
  console.log(snapshotTargets(snapshot).join('\n'));
}

/** Every drain from every source version picked (BENCH_SOURCES), into the sink cluster. */
async function drainAll(
  service: TestService,
  source: PgCluster,
  sink: PgCluster,
  binDir: string,
  scale: number,
  runs: number,
): Promise<{ sources: DrainSource[]; results: RunRecord[] }> {
  const drainSources: DrainSource[] = [];
  const results: RunRecord[] = [];
  for (const dir of drainBinDirs()) {
    // The embedded source is the one already running; any other version gets a cluster for its drains.
    const own =
      dir.binDir === binDir ? undefined : await startPgCluster(`bench-source-${dir.label}`, dir.binDir);
    if (own) cleanups.push({ what: `${dir.label} source cluster`, run: own.stop });
    const cluster = own ?? source;
    const [version] = await sqlOn<{ v: string }>(
      cluster.adminUrl,
      "SELECT current_setting('server_version') AS v",
    );
    const drainSource: DrainSource = { cluster, version: version?.v ?? 'unknown', label: dir.label };
    drainSources.push(drainSource);
    results.push(
      ...(await drainFromSource({
        service,
        source: drainSource,
        sinkAdminUrl: sink.adminUrl,
        sinkMajor: sink.majorVersion,
        sourcePid: await postmasterPid(cluster.adminUrl),
        sinkPid: await postmasterPid(sink.adminUrl),
        scale,
        runs,
        log,
        defer: (what, run) => cleanups.push({ what, run }),
      })),
    );
    await own?.stop();
  }

  return { sources: drainSources, results };
}

await runBenchmark(main);
