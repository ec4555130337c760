import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { drainBacklog } from './backlog.js';
import { dropDecodeSlots, runDecodeBenchmark } from './decode.js';
import { decodeDetailTable, decodeRatios, decodeSummaryTable } from './decode-report.js';
import { createNativeSubscription, dropNativeSubscription } from './native-subscription.js';
import { createOursPipeline } from './ours-pipeline.js';
import {
  codeVersion,
  detailTable,
  machineInfo,
  type RunRecord,
  summaryTable,
  writeBenchmarksMd,
} from './report.js';
import { runSnapshotBenchmark } from './snapshot.js';
import { snapshotDetailTable, snapshotSummaryTable, snapshotTargets } from './snapshot-report.js';
import { BENCH_TABLE_DDL, benchRuns, benchScale, workloads } from './workloads.js';

const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

// Steps that undo what was started, run newest first, once, on success, failure or a signal.
const cleanups: { what: string; run: () => Promise<void> | void }[] = [];
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step.run();
      } catch (error) {
        console.error(`cleanup (${step.what}) failed:`, error);
      }
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping what the benchmark started`);
    void cleanUp().finally(() => process.exit(130));
  });
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
  const config = { ...testConfig(store), log: { level: 'warn' as const } };
  cleanups.push({
    what: 'service data dir',
    run: () => rmSync(config.dataDir, { recursive: true, force: true }),
  });
  const service = await startTestService(config);
  cleanups.push({ what: 'service', run: service.stop });

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

  const drainLoad = loadavg()[0] ?? 0;
  log(`backlog drain; 1-minute load average now ${drainLoad.toFixed(2)}`);
  const [srcOurs, srcNative, sinkOurs, sinkNative] = await Promise.all([
    createDatabase(source.adminUrl, 'src_ours'),
    createDatabase(source.adminUrl, 'src_native'),
    createDatabase(sink.adminUrl, 'sink_ours'),
    createDatabase(sink.adminUrl, 'sink_native'),
  ]);
  await Promise.all([sqlOn(srcOurs, BENCH_TABLE_DDL), sqlOn(srcNative, BENCH_TABLE_DDL)]);

  log('creating our pipeline and the native subscription');
  const ours = await createOursPipeline(service, srcOurs, sinkOurs);
  await ours.pause();
  const native = await createNativeSubscription(srcNative, sinkNative);
  cleanups.push({ what: 'native subscription', run: () => dropNativeSubscription(sinkNative) });
  await native.pause();

  const results: RunRecord[] = [];
  for (let run = 1; run <= runs; run++) {
    for (const [i, workload] of workloads(scale).entries()) {
      // Alternating who goes first (per workload and per run) keeps warm caches from favouring one side.
      for (const system of (run + i) % 2 === 1 ? [ours, native] : [native, ours]) {
        log(`run ${run}/${runs}, ${system.name}: ${workload.label}`);
        const result = await drainBacklog(system, workload, 240_000);
        log(`  drained in ${result.seconds.toFixed(2)} s, ${Math.round(result.eventsPerSecond)} events/s`);
        results.push({ run, ...result });
      }
    }
  }

  // Last: nothing of the service streams now (both drain systems are paused), so this process
  // runs our change stream alone.
  log(`decoding; 1-minute load average now ${(loadavg()[0] ?? 0).toFixed(2)}`);
  cleanups.push({
    what: 'decode slots',
    run: () => dropDecodeSlots(source.adminUrl),
  });
  const decode = await runDecodeBenchmark({
    sourceAdminUrl: source.adminUrl,
    sinkAdminUrl: sink.adminUrl,
    scale,
    runs,
    log,
  });

  const peakRssMiB = process.resourceUsage().maxRSS / 1024;
  const settings = [scale === 1 ? '' : `BENCH_SCALE=${scale}`, runs === 3 ? '' : `BENCH_RUNS=${runs}`];
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
    peakRssMiB,
    snapshot,
    drainLoad,
    decode,
  });
  console.log(`\nSnapshot\n\n${snapshotSummaryTable(snapshot)}\n\n${snapshotDetailTable(snapshot)}\n`);
  console.log(snapshotTargets(snapshot).join('\n'));
  console.log(`\nBacklog drain\n\n${summaryTable(results)}\n\n${detailTable(results)}\n`);
  console.log(`\nDecoding\n\n${decodeSummaryTable(decode)}\n\n${decodeDetailTable(decode)}\n`);
  console.log(decodeRatios(decode).join('\n'));
  console.log(`peak RSS of this process: ${peakRssMiB.toFixed(0)} MiB; report written to ${path}`);
}

try {
  await main();
} catch (error) {
  console.error('benchmark failed:', error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
