import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

interface Point {
  at: string;
  state: string;
  phase: string;
  events_per_second: number;
  lag_ms: number;
  lag_bytes: number | null;
  sink_errors: number;
}

/** The charts start from the server's history, which tells the truth while the pipeline is paused too. */
describe("a pipeline's history", { timeout: 120_000 }, () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  const points = async (window = '1h') =>
    (await service.request('GET', `/v1/pipelines/hist/history?window=${window}`)).body.points as Point[];

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(
      adminUrl,
      `hist_${randomBytes(4).toString('hex')}`,
      'CREATE TABLE t (id serial PRIMARY KEY, v int)',
    ));
    await startConvergedPipeline(service, dbs, 'hist', ['public.t']);
  });
  afterAll(() => service?.stop());

  it('records a point every 10 s while it runs, and a paused one whose lag grows', async () => {
    await sqlOn(dbs.source, 'INSERT INTO t (v) SELECT g FROM generate_series(1, 100) g');
    const running = (await waitFor(
      async () => (await points()).find((p) => p.state === 'running'),
      'a point',
    )) as Point;
    expect(running).toMatchObject({ phase: 'streaming', sink_errors: 0 });
    expect(typeof running.events_per_second).toBe('number');

    await service.request('PUT', '/v1/pipelines/hist/state', { state: 'pause' });
    await sqlOn(dbs.source, 'INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g');
    const paused = (await waitFor(
      async () => (await points()).find((p) => p.state === 'paused' && p.lag_ms > 0),
      'a paused point with its lag',
    )) as Point;
    expect(paused.lag_bytes).toBeGreaterThan(0);
    const all = await points();
    expect(all.map((p) => p.at)).toEqual([...all.map((p) => p.at)].sort());
    await service.request('PUT', '/v1/pipelines/hist/state', { state: 'resume' });
  });

  it('answers a window it does not keep with 400', async () => {
    const refused = await service.request('GET', '/v1/pipelines/hist/history?window=3d');
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/^window: /);
    expect((await service.request('GET', '/v1/pipelines/nope/history')).status).toBe(404);
  });
});
