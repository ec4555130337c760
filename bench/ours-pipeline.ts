import { waitFor } from '../test/support/replication-fixture.js';
import type { Replication } from './replication.js';
import { call, type ServiceClient } from './service-api.js';
import { slotOf, waitSlotInactive } from './source-slot.js';
import { BENCH_TABLE } from './workloads.js';

/**
 * Our pipeline `name` for `BENCH_TABLE`, made and started through the REST API with default sink
 * properties (it creates the sink table itself), returned once the snapshot is done. Its
 * connections are `<name>-src` and `<name>-dst`.
 */
export async function createOursPipeline(
  service: ServiceClient,
  sourceUrl: string,
  sinkUrl: string,
  name = 'bench',
): Promise<Replication> {
  await call(service, 'POST', '/v1/connections', { name: `${name}-src`, type: 'postgres', dsn: sourceUrl });
  await call(service, 'POST', '/v1/connections', { name: `${name}-dst`, type: 'postgres', dsn: sinkUrl });
  await call(service, 'POST', '/v1/pipelines', {
    name,
    source: { connection: `${name}-src`, tables: [BENCH_TABLE] },
    sink: { connection: `${name}-dst`, properties: {} },
  });
  await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
  await waitFor(async () => {
    const pipeline = await call(service, 'GET', `/v1/pipelines/${name}`);
    if (pipeline.state === 'failed') throw new Error(`pipeline failed: ${pipeline.error}`);
    return (await call(service, 'GET', `/v1/pipelines/${name}/progress`)).phase === 'streaming';
  }, 'our pipeline to finish its snapshot');
  const slot = await slotOf(sourceUrl);
  return {
    name: 'ours',
    sourceUrl,
    sinkUrl,
    slot,
    pause: async () => {
      await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'pause' });
      await waitSlotInactive(sourceUrl, slot);
    },
    resume: async () => {
      await call(service, 'PUT', `/v1/pipelines/${name}/state`, { state: 'resume' });
    },
  };
}

/** Deletes the pipeline `name` and its connections (the slot and publication go with it). */
export async function deleteOursPipeline(service: ServiceClient, name = 'bench'): Promise<void> {
  await call(service, 'DELETE', `/v1/pipelines/${name}`);
  await call(service, 'DELETE', `/v1/connections/${name}-dst`);
  await call(service, 'DELETE', `/v1/connections/${name}-src`);
}
