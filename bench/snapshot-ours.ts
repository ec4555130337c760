import type { TestService } from '../test/support/service.js';
import { secondsUntil } from './poll.js';
import { call } from './service-api.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

/** One timed snapshot by our pipeline, with the memory of this process (which runs the service). */
export interface OursSnapshot {
  seconds: number;
  /** The pipeline's snapshot options as the service reports them (defaults filled in). */
  parallelism: number;
  partitionRows: number;
  partitions: number;
  /** process.resourceUsage().maxRSS just before the start and once the pipeline streams, MiB. */
  maxRssBeforeMiB: number;
  maxRssAfterMiB: number;
  /** Highest process.memoryUsage.rss() seen at the polls during the snapshot, MiB. */
  sampledRssPeakMiB: number;
}

const maxRssMiB = () => process.resourceUsage().maxRSS / 1024;

/**
 * Our snapshot of `SNAPSHOT_TABLE` into the sink's empty table: connections and a pipeline made
 * through the REST API (`snapshot` options as given, else the defaults), timed from
 * `PUT /v1/pipelines/{name}/state {"state":"start"}` until `GET .../progress` shows the phase
 * `streaming` (or every table `streaming`); then the pipeline is deleted (its slot and publication
 * go with it, the sink table stays for the check that follows).
 */
export async function oursSnapshot(
  service: TestService,
  name: string,
  sourceUrl: string,
  sinkUrl: string,
  snapshot: { parallelism: number } | undefined,
  timeoutMs: number,
): Promise<OursSnapshot> {
  const src = `${name}-src`;
  const dst = `${name}-dst`;
  await call(service, 'POST', '/v1/connections', { name: src, type: 'postgres', dsn: sourceUrl });
  await call(service, 'POST', '/v1/connections', { name: dst, type: 'postgres', dsn: sinkUrl });
  try {
    const created = await call(service, 'POST', '/v1/pipelines', {
      name,
      source: { connection: src, tables: [SNAPSHOT_TABLE] },
      sink: { connection: dst, properties: {} },
      ...(snapshot ? { snapshot } : {}),
    });
    try {
      const maxRssBeforeMiB = maxRssMiB();
      let sampledRssPeakMiB = process.memoryUsage.rss() / 2 ** 20;
      let partitions = 0;
      let polls = 0;
      const started = performance.now();
      await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
      const seconds = await secondsUntil(
        started,
        async () => {
          sampledRssPeakMiB = Math.max(sampledRssPeakMiB, process.memoryUsage.rss() / 2 ** 20);
          const progress = await call(service, 'GET', `/v1/pipelines/${name}/progress`);
          const tables: { status: string; partitions_total: number }[] = progress.tables;
          partitions = tables.reduce((sum, t) => sum + t.partitions_total, 0);
          if (progress.phase === 'streaming' || tables.every((t) => t.status === 'streaming')) return true;
          // Once a second: a failed pipeline would otherwise only show as a timeout.
          if (++polls % 10 === 0) {
            const pipeline = await call(service, 'GET', `/v1/pipelines/${name}`);
            if (pipeline.state === 'failed') throw new Error(`pipeline ${name} failed: ${pipeline.error}`);
          }
          return false;
        },
        `our pipeline ${name} to finish its snapshot`,
        timeoutMs,
      );
      return {
        seconds,
        parallelism: created.snapshot.parallelism,
        partitionRows: created.snapshot.partition_rows,
        partitions,
        maxRssBeforeMiB,
        maxRssAfterMiB: maxRssMiB(),
        sampledRssPeakMiB,
      };
    } finally {
      await call(service, 'DELETE', `/v1/pipelines/${name}`);
    }
  } finally {
    await call(service, 'DELETE', `/v1/connections/${dst}`);
    await call(service, 'DELETE', `/v1/connections/${src}`);
  }
}
