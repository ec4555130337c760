/**
 * Drains the backlog workloads with our pipeline alone, to profile it: run under
 * `node --cpu-prof --cpu-prof-dir=<dir> --import tsx bench/profile-drain.ts`, then summarise the
 * profile with `tsx bench/profile-summary.ts <dir>/*.cpuprofile`. PROFILE_WORKLOADS picks
 * workloads by index (`0,1`; 2 is the concurrent-clients one), BENCH_SCALE scales them.
 */
import { rmSync } from 'node:fs';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { drainBacklog } from './backlog.js';
import { createOursPipeline } from './ours-pipeline.js';
import { BENCH_TABLE_DDL, benchScale, concurrentWorkload, workloads } from './workloads.js';

const picked = (process.env.PROFILE_WORKLOADS ?? '0,1').split(',').map(Number);
const { binDir } = availableBinDirs()[0]!;
const source = await startPgCluster('profile-source', binDir);
const sink = await startPgCluster('profile-sink', binDir);
const store = await createDatabase(sink.adminUrl, 'replicator_store');
const config = { ...testConfig(store), log: { level: 'warn' as const, format: 'json' as const } };
const service = await startTestService(config);
try {
  const src = await createDatabase(source.adminUrl, 'src_ours');
  const dst = await createDatabase(sink.adminUrl, 'sink_ours');
  await sqlOn(src, BENCH_TABLE_DDL);
  const ours = await createOursPipeline(service, src, dst);
  await ours.pause();
  const scale = benchScale();
  const all = [...workloads(scale), concurrentWorkload(Math.max(1, Math.round(100_000 * scale)))];
  for (const [i, workload] of all.entries()) {
    if (!picked.includes(i)) continue;
    const cpu = process.cpuUsage();
    const result = await drainBacklog(ours, workload, 600_000);
    const used = process.cpuUsage(cpu);
    console.log(
      `${workload.label}: ${result.seconds.toFixed(2)} s (first row ${result.firstRowSeconds.toFixed(2)} s), ` +
        `${Math.round(result.eventsPerSecond)} events/s, process CPU ${((used.user + used.system) / 1e6).toFixed(2)} s ` +
        `(including the backlog's reset and write), peak RSS ${result.peakRssMiB.toFixed(0)} MiB`,
    );
  }
} finally {
  await service.stop();
  rmSync(config.dataDir, { recursive: true, force: true });
  await sink.stop();
  await source.stop();
}
