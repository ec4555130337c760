import { createDatabase, type PgCluster } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { type DrainResult, drainBacklog } from './backlog.js';
import { type CpuSample, cpuSample, cpuUsed } from './cpu-usage.js';
import {
  createNativeSubscription,
  dropNativeSubscription,
  withParallelStreaming,
} from './native-subscription.js';
import { createOursPipeline, deleteOursPipeline } from './ours-pipeline.js';
import type { Replication } from './replication.js';
import type { ServiceClient } from './service-api.js';
import { BENCH_TABLE_DDL, drainWorkloads } from './workloads.js';

/** One drain with the repetition it belongs to (1-based). */
/** A drain, and the CPU each side used from the resume until the sink held every row. */
export type RunRecord = DrainResult & { run: number; cpu: CpuSample };

const TIMEOUT_MS = 600_000;

/** A source cluster of the drain benchmark, with the version it runs. */
export interface DrainSource {
  cluster: PgCluster;
  /** `server_version`, e.g. 17.10 or 15.20 (Debian ...). */
  version: string;
  /** Where its binaries come from: `embedded` or `debian-15`. */
  label: string;
}

/**
 * Every drain workload, `runs` times, from one source cluster into the sink cluster: our pipeline,
 * the subscription with `streaming = off`, and, for the big transaction with PostgreSQL 16+ on both
 * sides, the subscription with `streaming = parallel`. Each system has databases of its own, named
 * after the source (`src_ours_<label>`, ...); the pipeline and the subscription are removed at the
 * end, `defer` registering their removal for a failure.
 */
export async function drainFromSource(o: {
  service: ServiceClient;
  source: DrainSource;
  sinkAdminUrl: string;
  /** Postmasters of the source and sink clusters, whose processes' CPU is measured. */
  sourcePid: number;
  sinkPid: number;
  sinkMajor: number;
  scale: number;
  runs: number;
  log: (message: string) => void;
  defer: (what: string, run: () => Promise<void>) => void;
}): Promise<RunRecord[]> {
  const { service, source, runs, log } = o;
  const key = source.label.replace(/\W/g, '_');
  const major = source.cluster.majorVersion;
  const [srcOurs, srcNative, sinkOurs, sinkNative] = await Promise.all([
    createDatabase(source.cluster.adminUrl, `src_ours_${key}`),
    createDatabase(source.cluster.adminUrl, `src_native_${key}`),
    createDatabase(o.sinkAdminUrl, `sink_ours_${key}`),
    createDatabase(o.sinkAdminUrl, `sink_native_${key}`),
  ]);
  await Promise.all([sqlOn(srcOurs, BENCH_TABLE_DDL), sqlOn(srcNative, BENCH_TABLE_DDL)]);

  log(`PostgreSQL ${source.version} source: creating our pipeline and the native subscription`);
  const pipeline = `bench-${key.replaceAll('_', '-')}`;
  const subscription = `bench_native_${key}`;
  const ours = await createOursPipeline(service, srcOurs, sinkOurs, pipeline);
  let oursLeft = true;
  o.defer(`pipeline ${pipeline}`, async () => {
    if (oursLeft) await deleteOursPipeline(service, pipeline);
  });
  await ours.pause();
  const native = await createNativeSubscription(srcNative, sinkNative, subscription);
  o.defer(`subscription ${subscription}`, () => dropNativeSubscription(sinkNative, subscription));
  await native.pause();
  // Parallel apply of a streamed transaction needs protocol 4: a PostgreSQL 16+ publisher and subscriber.
  const parallel = major >= 16 && o.sinkMajor >= 16 ? withParallelStreaming(native, subscription) : undefined;

  const results: RunRecord[] = [];
  try {
    for (let run = 1; run <= runs; run++) {
      for (const [i, workload] of drainWorkloads(o.scale).entries()) {
        const systems: Replication[] = [
          ours,
          native,
          ...(workload.kind === 'big' && parallel ? [parallel] : []),
        ];
        // Rotating who goes first (per workload and per run) keeps warm caches from favouring one side.
        const shift = (run + i) % systems.length;
        for (const system of [...systems.slice(shift), ...systems.slice(0, shift)]) {
          log(`PG ${major} run ${run}/${runs}, ${system.name}: ${workload.label}`);
          let cpuBefore = cpuSample(o.sourcePid, o.sinkPid);
          let cpu = cpuUsed(cpuBefore, cpuBefore);
          const result = await drainBacklog(system, workload, TIMEOUT_MS, {
            resumed: () => {
              cpuBefore = cpuSample(o.sourcePid, o.sinkPid);
            },
            drained: () => {
              cpu = cpuUsed(cpuBefore, cpuSample(o.sourcePid, o.sinkPid));
            },
          });
          log(
            `  start-up ${result.firstRowSeconds.toFixed(2)} s, then ${result.drainSeconds.toFixed(2)} s: ` +
              `${result.seconds.toFixed(2)} s, ${Math.round(result.eventsPerSecond)} events/s`,
          );
          results.push({ run, ...result, cpu });
        }
      }
    }
  } finally {
    await dropNativeSubscription(sinkNative, subscription);
    await deleteOursPipeline(service, pipeline);
    oursLeft = false;
  }
  return results;
}
