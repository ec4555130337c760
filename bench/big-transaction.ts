/**
 * The big-transaction drain alone: one transaction of 1,000,000 rows × BENCH_SCALE, drained by our
 * pipeline and by the native subscription with `streaming = parallel` (PostgreSQL 16+), one after
 * the other in each of BENCH_RUNS runs, from the embedded PostgreSQL into another. A quick check of
 * that one figure of `npm run bench` (same workload, same drain), without the other sections.
 *
 *     BENCH_RUNS=3 npx tsx bench/big-transaction.ts
 */
import { loadavg } from 'node:os';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { drainBacklog } from './backlog.js';
import { cleanups, runBenchmark } from './cleanups.js';
import { copyPipe } from './copy-pipe.js';
import { cpuSample, cpuUsed, postmasterPid } from './cpu-usage.js';
import {
  createNativeSubscription,
  dropNativeSubscription,
  withParallelStreaming,
} from './native-subscription.js';
import { createOursPipeline, deleteOursPipeline } from './ours-pipeline.js';
import type { Replication } from './replication.js';
import { BENCH_TABLE, BENCH_TABLE_DDL, benchRuns, benchScale, bigTransactionWorkload } from './workloads.js';

const COPY_FLOOR = 'one COPY pipe of the same rows into a keyed table';

const log = (message: string) => console.log(`[big ${new Date().toISOString().slice(11, 19)}] ${message}`);

async function main(): Promise<void> {
  const scale = benchScale();
  const runs = benchRuns();
  const { binDir } = availableBinDirs()[0]!;
  const source = await startPgCluster('big-source', binDir);
  cleanups.push({ what: 'source cluster', run: source.stop });
  const sink = await startPgCluster('big-sink', binDir);
  cleanups.push({ what: 'sink cluster', run: sink.stop });
  if (source.majorVersion < 16 || sink.majorVersion < 16)
    throw new Error('parallel apply needs PostgreSQL 16+');
  const store = await createDatabase(sink.adminUrl, 'replicator_store');
  const service = await startTestService({
    ...testConfig(store),
    log: { level: 'warn' as const, format: 'json' as const },
  });
  cleanups.push({ what: 'service', run: service.stop });
  const [srcOurs, srcNative, sinkOurs, sinkNative] = await Promise.all([
    createDatabase(source.adminUrl, 'src_ours'),
    createDatabase(source.adminUrl, 'src_native'),
    createDatabase(sink.adminUrl, 'sink_ours'),
    createDatabase(sink.adminUrl, 'sink_native'),
  ]);
  const sinkCopy = await createDatabase(sink.adminUrl, 'sink_copy');
  await Promise.all([sqlOn(srcOurs, BENCH_TABLE_DDL), sqlOn(srcNative, BENCH_TABLE_DDL)]);
  const ours = await createOursPipeline(service, srcOurs, sinkOurs, 'big');
  cleanups.push({ what: 'pipeline', run: () => deleteOursPipeline(service, 'big') });
  await ours.pause();
  const native = await createNativeSubscription(srcNative, sinkNative, 'big_native');
  cleanups.push({ what: 'subscription', run: () => dropNativeSubscription(sinkNative, 'big_native') });
  await native.pause();
  const parallel = withParallelStreaming(native, 'big_native');
  const workload = bigTransactionWorkload(Math.max(1, Math.round(1_000_000 * scale)));
  const [sourcePid, sinkPid] = await Promise.all([
    postmasterPid(source.adminUrl),
    postmasterPid(sink.adminUrl),
  ]);
  const seconds: Record<string, number[]> = {};
  for (let run = 1; run <= runs; run++) {
    const systems: Replication[] = run % 2 ? [ours, parallel] : [parallel, ours];
    for (const system of systems) {
      let cpuBefore = cpuSample(sourcePid, sinkPid);
      let cpu = cpuUsed(cpuBefore, cpuBefore);
      const result = await drainBacklog(system, workload, 600_000, {
        resumed: () => {
          cpuBefore = cpuSample(sourcePid, sinkPid);
        },
        drained: () => {
          cpu = cpuUsed(cpuBefore, cpuSample(sourcePid, sinkPid));
        },
      });
      log(
        `run ${run}/${runs} ${system.name}: ${workload.label}: first row ${result.firstRowSeconds.toFixed(2)} s, ` +
          `total ${result.seconds.toFixed(2)} s (1-minute load ${(loadavg()[0] ?? 0).toFixed(2)}); CPU s: this process ` +
          `${cpu.self.toFixed(1)}, source ${cpu.source.toFixed(1)}, sink ${cpu.sink.toFixed(1)}`,
      );
      seconds[system.name] = [...(seconds[system.name] ?? []), result.seconds];
    }
    // The floor under any apply in one sink transaction: the sink's own COPY of the same rows
    // (text, the key in place), fed by a COPY pipe from the source table the run just filled.
    await sqlOn(sinkCopy, `DROP TABLE IF EXISTS ${BENCH_TABLE}; ${BENCH_TABLE_DDL}`);
    const started = performance.now();
    const copied = await copyPipe(srcOurs, sinkCopy, BENCH_TABLE);
    const copySeconds = (performance.now() - started) / 1000;
    if (copied !== workload.rows)
      throw new Error(`the COPY pipe copied ${copied} rows, not ${workload.rows}`);
    log(`run ${run}/${runs} ${COPY_FLOOR}: ${copySeconds.toFixed(2)} s`);
    seconds[COPY_FLOOR] = [...(seconds[COPY_FLOOR] ?? []), copySeconds];
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const oursMedian = median(seconds[ours.name] ?? []);
  const nativeMedian = median(seconds[parallel.name] ?? []);
  log(
    `medians: ours ${oursMedian.toFixed(2)} s, ${parallel.name} ${nativeMedian.toFixed(2)} s: ` +
      `${(nativeMedian / oursMedian).toFixed(2)}× native; ${COPY_FLOOR} ${median(seconds[COPY_FLOOR] ?? []).toFixed(2)} s`,
  );
}

await runBenchmark(main);
