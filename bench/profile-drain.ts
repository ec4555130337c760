/**
 * Drains the backlog workloads with our pipeline alone, to profile it: `PROFILE_OUT=<dir> tsx
 * bench/profile-drain.ts` writes one CPU profile per drain, from the resume to the pause after it
 * (the start-up of the clusters and the service, the reset and the backlog's write left out), or
 * run under `node --cpu-prof --cpu-prof-dir=<dir> --import tsx bench/profile-drain.ts` for the
 * whole process; then summarise with `tsx bench/profile-summary.ts <dir>/*.cpuprofile`. PROFILE_WORKLOADS picks
 * workloads by index (`0,1`; 2 is the concurrent-clients one), BENCH_SCALE scales them,
 * PROFILE_RUNS (default 1) repeats each drain, PROFILE_HEAP=1 adds a `.heapprofile` of what each
 * drain allocated, PROFILE_SOURCE (`embedded`, `debian-15`) picks the
 * source's PostgreSQL (the sink runs the embedded one).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { availableBinDirs, createDatabase, startPgCluster } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { startTestService, testConfig } from '../test/support/service.js';
import { drainBacklog } from './backlog.js';
import { createOursPipeline } from './ours-pipeline.js';
import type { Replication } from './replication.js';
import type { ServiceClient } from './service-api.js';
import { BENCH_TABLE_DDL, benchScale, concurrentWorkload, workloads } from './workloads.js';

const picked = (process.env.PROFILE_WORKLOADS ?? '0,1').split(',').map(Number);
const runs = Number(process.env.PROFILE_RUNS ?? '1');
// PROFILE_HEAP=1: also a sampling heap profile per drain (what allocates, by call site).
const heap = process.env.PROFILE_HEAP === '1';
const dirs = availableBinDirs();
const { binDir } = dirs[0]!;
const sourceLabel = process.env.PROFILE_SOURCE ?? 'embedded';
const sourceDir = dirs.find((d) => d.label === sourceLabel);
if (!sourceDir)
  throw new Error(`PROFILE_SOURCE: '${sourceLabel}' is not among ${dirs.map((d) => d.label).join(', ')}`);
const source = await startPgCluster('profile-source', sourceDir.binDir);
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
  const profiled = profiledDrains(ours, process.env.PROFILE_OUT, service);
  const scale = benchScale();
  const all = [...workloads(scale), concurrentWorkload(Math.max(1, Math.round(100_000 * scale)))];
  for (const [i, workload] of all.entries()) {
    if (!picked.includes(i)) continue;
    for (let run = 1; run <= runs; run++) {
      const cpu = process.cpuUsage();
      const result = await drainBacklog(profiled, workload, 600_000);
      const used = process.cpuUsage(cpu);
      console.log(
        `${workload.label}, run ${run}: ${result.seconds.toFixed(2)} s (first row ${result.firstRowSeconds.toFixed(2)} s), ` +
          `${Math.round(result.eventsPerSecond)} events/s, process CPU ${((used.user + used.system) / 1e6).toFixed(2)} s ` +
          `(including the backlog's reset and write), peak RSS ${result.peakRssMiB.toFixed(0)} MiB`,
      );
    }
  }
} finally {
  await service.stop();
  rmSync(config.dataDir, { recursive: true, force: true });
  await sink.stop();
  await source.stop();
}

/**
 * `r` with its drains measured: a drain resumes twice (the reset, then the backlog), so from every
 * second resume to the pause that follows it this process's CPU time and the sink batches are
 * counted, and with `dir` a CPU profile is taken and written there.
 */
function profiledDrains(r: Replication, dir: string | undefined, service: ServiceClient): Replication {
  if (dir) mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  let resumes = 0;
  let window: { cpu: NodeJS.CpuUsage; batches: BatchFigures } | undefined;
  return {
    ...r,
    resume: async () => {
      resumes++;
      if (resumes % 2 === 0) {
        if (dir) {
          await session.post('Profiler.enable');
          await session.post('Profiler.start');
          if (heap)
            await session.post('HeapProfiler.startSampling', {
              samplingInterval: 4096,
              includeObjectsCollectedByMajorGC: true,
              includeObjectsCollectedByMinorGC: true,
            });
        }
        window = { cpu: process.cpuUsage(), batches: await batchFigures(service) };
      }
      await r.resume();
    },
    pause: async () => {
      if (window) {
        const cpu = process.cpuUsage(window.cpu);
        const after = await batchFigures(service);
        const batches = after.count - window.batches.count;
        const events = after.events - window.batches.events;
        const seconds = after.seconds - window.batches.seconds;
        window = undefined;
        console.log(
          `  resume to pause: process CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s; ${batches} sink batches, ` +
            `${Math.round(events / Math.max(1, batches))} events each, ${seconds.toFixed(2)} s writing them`,
        );
        if (dir) {
          const { profile } = await session.post('Profiler.stop');
          writeFileSync(join(dir, `drain-${resumes / 2}.cpuprofile`), JSON.stringify(profile));
          if (heap) {
            const sampled = await session.post('HeapProfiler.stopSampling');
            writeFileSync(join(dir, `drain-${resumes / 2}.heapprofile`), JSON.stringify(sampled.profile));
          }
        }
      }
      await r.pause();
    },
  };
}

interface BatchFigures {
  count: number;
  events: number;
  seconds: number;
}

/** The sink batch histograms' totals, from `/metrics`. */
async function batchFigures(service: ServiceClient): Promise<BatchFigures> {
  const res = await service.request('GET', '/metrics');
  const text = typeof res.body === 'string' ? res.body : String(res.body);
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(name))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return {
    count: sum('replicator_pipeline_sink_batch_events_count'),
    events: sum('replicator_pipeline_sink_batch_events_sum'),
    seconds: sum('replicator_pipeline_sink_apply_duration_seconds_sum'),
  };
}
