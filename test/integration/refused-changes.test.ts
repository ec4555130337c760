import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type replicationDatabases,
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const cluster = inject('pgClusters')[0];

describe('a change the sink refuses', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const pipeline = async () => (await service.request('GET', '/v1/pipelines/refused')).body;

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'refused',
      'CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items SELECT g, $$ok$$ FROM generate_series(1, 50) g',
    ));
    await startConvergedPipeline(service, dbs, 'refused', ['public.items']);
  });
  afterAll(() => service?.stop());

  it('fails the pipeline at once, naming the table, the key and the sink error', async () => {
    // The sink will not take one value any more: a constraint its owner added.
    await sqlOn(dbs.sink, "ALTER TABLE public.items ADD CONSTRAINT no_poison CHECK (v <> 'poison')");
    await sqlOn(
      dbs.source,
      "BEGIN; INSERT INTO items SELECT g, 'fine' FROM generate_series(100, 140) g; INSERT INTO items VALUES (142, 'poison'); INSERT INTO items VALUES (143, 'fine'); COMMIT",
    );
    const failed = await waitFor(
      async () => {
        const p = await pipeline();
        return p.state === 'failed' ? p : undefined;
      },
      'the pipeline to fail',
      30_000,
    );
    expect(failed.error).toContain('public.items');
    expect(failed.error).toContain('(id)=(142)');
    expect(failed.error).toContain('no_poison');
    // The run history is written by the state recorder just after the actor's state changes.
    const latest = await waitFor(async () => {
      const runs = (await service.request('GET', '/v1/pipelines/refused/runs')).body;
      const run = (Array.isArray(runs) ? runs : runs.runs)[0];
      return run?.error ? run : undefined;
    }, 'the failed run to be recorded');
    expect(latest.error).toContain('(id)=(142)');
    // Nothing of the refused transaction landed.
    const [{ n }] = await sqlOn(dbs.sink, 'SELECT count(*)::int AS n FROM items WHERE id >= 100');
    expect(n).toBe(0);
  });

  it('clears the error on stop, and takes up the change again once the sink is fixed', async () => {
    const stopped = await service.request('PUT', '/v1/pipelines/refused/state', { state: 'stop' });
    expect(stopped.status).toBe(200);
    await waitFor(async () => (await pipeline()).state === 'stopped', 'stopped');
    expect((await pipeline()).error).toBeNull();
    await sqlOn(dbs.sink, 'ALTER TABLE public.items DROP CONSTRAINT no_poison');
    await service.request('PUT', '/v1/pipelines/refused/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'items');
    expect((await pipeline()).state).toBe('running');
  });
});
