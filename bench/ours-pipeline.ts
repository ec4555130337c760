import { waitFor } from '../test/support/replication-fixture.js';
import type { TestService } from '../test/support/service.js';
import type { Replication } from './replication.js';
import { call } from './service-api.js';
import { slotOf, waitSlotInactive } from './source-slot.js';
import { BENCH_TABLE } from './workloads.js';

const NAME = 'bench';

/**
 * Our pipeline for `BENCH_TABLE`, made and started through the REST API with default sink
 * properties (it creates the sink table itself), returned once the snapshot is done.
 */
export async function createOursPipeline(
  service: TestService,
  sourceUrl: string,
  sinkUrl: string,
): Promise<Replication> {
  await call(service, 'POST', '/v1/connections', { name: 'bench-src', type: 'postgres', dsn: sourceUrl });
  await call(service, 'POST', '/v1/connections', { name: 'bench-dst', type: 'postgres', dsn: sinkUrl });
  await call(service, 'POST', '/v1/pipelines', {
    name: NAME,
    source: { connection: 'bench-src', tables: [BENCH_TABLE] },
    sink: { connection: 'bench-dst', properties: {} },
  });
  await call(service, 'PUT', `/v1/pipelines/${NAME}/state`, { state: 'start' });
  await waitFor(async () => {
    const pipeline = await call(service, 'GET', `/v1/pipelines/${NAME}`);
    if (pipeline.state === 'failed') throw new Error(`pipeline failed: ${pipeline.error}`);
    return (await call(service, 'GET', `/v1/pipelines/${NAME}/progress`)).phase === 'streaming';
  }, 'our pipeline to finish its snapshot');
  const slot = await slotOf(sourceUrl);
  return {
    name: 'ours',
    sourceUrl,
    sinkUrl,
    slot,
    pause: async () => {
      await call(service, 'PUT', `/v1/pipelines/${NAME}/state`, { state: 'pause' });
      await waitSlotInactive(sourceUrl, slot);
    },
    resume: async () => {
      await call(service, 'PUT', `/v1/pipelines/${NAME}/state`, { state: 'resume' });
    },
  };
}
