import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0];

describe('a sink that is the source itself', () => {
  let service: TestService;
  let dbs: { store: string; source: string; sink: string };

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'own_source');
    await sqlOn(
      dbs.source,
      'CREATE TABLE items (id int PRIMARY KEY, name text); INSERT INTO items VALUES (1, $$kept$$)',
    );
    service = await startTestService(testConfig(dbs.store));
    // The same database through another address: only the server's identity tells them apart.
    const sameDbOtherHost = new URL(dbs.source);
    sameDbOtherHost.hostname = 'localhost';
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['src-alias', sameDbOtherHost.toString()],
      ['dst', dbs.sink],
      ['unreachable', 'postgres://u@127.0.0.1:1/nowhere'],
    ] as const) {
      expect((await service.request('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(
        201,
      );
    }
  });
  afterAll(() => service?.stop());

  const definition = (sink: string, properties: Record<string, string> = {}) => ({
    source: { connection: 'src', tables: ['public.items'] },
    sink: { connection: sink, properties },
  });
  const rowsLeft = async () => (await sqlOn(dbs.source, 'SELECT count(*)::int AS n FROM items'))[0].n;

  it.each([
    ['the same connection', 'src', {}],
    ['another connection to the same database', 'src-alias', {}],
    [
      'a table mapping back onto the source table',
      'src',
      { target_schema: 'copy', 'table.public.items': 'public.items' },
    ],
  ])('is refused at create: %s', async (_what, sink, properties) => {
    const res = await service.request('POST', '/v1/pipelines', {
      name: 'loop',
      ...definition(sink, properties),
    });
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(res.body.error).toContain('sink.connection: writes to the source database itself');
    expect(res.body.error).toContain('public.items');
    expect((await service.request('GET', '/v1/pipelines/loop')).status).toBe(404);
  });

  it('accepts the same database with other target tables, and refuses an update onto the source table', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'copy',
      ...definition('src', { target_schema: 'copy' }),
    });
    expect(created.status).toBe(201);
    const replaced = await service.request('PUT', '/v1/pipelines/copy', definition('src-alias'));
    expect(replaced).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect((await service.request('GET', '/v1/pipelines/copy')).body.sink.properties).toEqual({
      target_schema: 'copy',
    });
  });

  it('is checked again at start, when the sink connection was changed to the source since', async () => {
    expect(
      (await service.request('POST', '/v1/pipelines', { name: 'later', ...definition('unreachable') }))
        .status,
    ).toBe(201);
    const repointed = await service.request('PUT', '/v1/connections/unreachable', {
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(repointed.status).toBe(200);
    const start = await service.request('PUT', '/v1/pipelines/later/state', { state: 'start' });
    expect(start).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect((await service.request('GET', '/v1/pipelines/later')).body.state).toBe('stopped');
    expect(await rowsLeft()).toBe(1);
  });

  it('fails a running pipeline whose sink connection is repointed at the source, leaving the source whole', async () => {
    await service.request('POST', '/v1/pipelines', { name: 'running', ...definition('dst') });
    expect((await service.request('PUT', '/v1/pipelines/running/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/running/progress')).body.phase === 'streaming',
      'the pipeline to stream',
    );
    const repointed = await service.request('PUT', '/v1/connections/dst', {
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(repointed.status).toBe(200);
    const failed = await waitFor(async () => {
      const p = (await service.request('GET', '/v1/pipelines/running')).body;
      return p.state === 'failed' ? p : undefined;
    }, 'the pipeline to fail');
    expect(failed.error).toContain('writes to the source database itself');
    expect(await rowsLeft()).toBe(1);
  });
});
