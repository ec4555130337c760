import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type replicationDatabases,
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('a schema review survives a stop, a start and a restart of the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const state = async () => (await service.request('GET', '/v1/pipelines/kept')).body.state;
  const waitState = (wanted: string) =>
    waitFor(async () => (await state()) === wanted, `kept to be ${wanted}`);
  const proposed = async () => (await service.request('GET', '/v1/pipelines/kept/schema/proposed')).body;

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'review_kept',
      'CREATE TABLE kept (id int PRIMARY KEY, a text); INSERT INTO kept VALUES (1, $$one$$)',
    ));
    await startConvergedPipeline(service, dbs, 'kept', ['public.kept'], { schema_policy: 'review' });
  });
  afterAll(() => service?.stop());

  it('keeps the same proposal through stop and start', async () => {
    await sqlOn(dbs.source, 'ALTER TABLE kept ADD COLUMN b integer');
    await sqlOn(dbs.source, "INSERT INTO kept VALUES (2, 'two', 5)");
    await waitState('pending_schema_approval');
    const first = await proposed();
    expect(first.changes).toMatchObject([{ kind: 'add_column', column: 'b' }]);

    expect((await service.request('PUT', '/v1/pipelines/kept/state', { state: 'stop' })).status).toBe(200);
    await waitState('stopped');
    expect((await proposed()).id).toBe(first.id);
    expect((await service.request('PUT', '/v1/pipelines/kept/state', { state: 'start' })).status).toBe(200);
    await waitState('pending_schema_approval');
    expect((await proposed()).id).toBe(first.id);
  });

  it('keeps it through a restart of the service, and applies the held change once approved', async () => {
    const before = (await proposed()).id;
    await service.stop();
    service = await startTestService(testConfig(dbs.store));
    await waitState('pending_schema_approval');
    expect((await proposed()).id).toBe(before);
    // The sink's owner made the change by hand meanwhile: approving skips it and says so.
    await sqlOn(dbs.sink, 'ALTER TABLE public.kept ADD COLUMN b integer');
    const approved = await service.request('POST', '/v1/pipelines/kept/schema/approve', {
      proposal_id: before,
    });
    expect(approved.status).toBe(200);
    expect(approved.body.skipped_ddl).toEqual([expect.stringContaining('ADD COLUMN "b"')]);
    await waitState('running');
    await waitConverged(dbs.source, dbs.sink, 'kept');
    expect(await sqlOn(dbs.sink, 'SELECT id, b FROM kept WHERE id = 2')).toEqual([{ id: 2, b: 5 }]);
  });
});
