import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type replicationDatabases,
  replicationService,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('definitions that cannot run are refused when written', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const create = (name: string, body: object) => service.request('POST', '/v1/pipelines', { name, ...body });

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'definitions',
      `CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY);
       CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
       CREATE TABLE moods (id int PRIMARY KEY, m mood); INSERT INTO moods VALUES (1, 'ok');
       CREATE TABLE gen (id int PRIMARY KEY, a int, doubled int GENERATED ALWAYS AS (a * 2) STORED);
       INSERT INTO gen (id, a) VALUES (1, 10), (2, 20)`,
    ));
    await service.request('POST', '/v1/connections', {
      name: 'down',
      type: 'postgres',
      dsn: 'postgres://u@127.0.0.1:1/down',
    });
  });
  afterAll(() => service?.stop());

  it('refuses two source tables written to one target', async () => {
    const res = await create('two-to-one', {
      source: { connection: 'src', tables: ['public.a', 'public.b'] },
      sink: { connection: 'dst', properties: { 'table.public.b': 'a' } },
    });
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(res.body.error).toContain(
      'sink.properties: public.a and public.b would both be written to public.a',
    );
  });

  it('refuses a table property naming a table the pipeline does not replicate', async () => {
    const res = await create('stray', {
      source: { connection: 'src', tables: ['public.a'] },
      sink: { connection: 'dst', properties: { 'table.public.nope': 'x' } },
    });
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(res.body.error).toContain(
      "sink.properties.table.public.nope: 'public.nope' is not one of source.tables",
    );
  });

  it('refuses to start a pipeline whose connection was deleted, even with its source down', async () => {
    await service.request('POST', '/v1/connections', { name: 'doomed', type: 'postgres', dsn: dbs.sink });
    expect(
      (
        await create('orphan', {
          source: { connection: 'down', tables: ['public.a'] },
          sink: { connection: 'doomed' },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await fetch(`${service.url}/v1/connections/doomed?force=true`, {
          method: 'DELETE',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(204);
    const start = await service.request('PUT', '/v1/pipelines/orphan/state', { state: 'start' });
    expect(start).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(start.body.error).toContain("sink.connection: connection 'doomed' does not exist");
    expect((await service.request('GET', '/v1/pipelines/orphan')).body.state).toBe('stopped');
  });

  it('refuses a table whose types the sink lacks, and takes it once they exist', async () => {
    const definition = {
      source: { connection: 'src', tables: ['public.moods'] },
      sink: { connection: 'dst' },
    };
    const refused = await create('moods', definition);
    expect(refused).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(refused.body.error).toContain('public.moods uses the types mood');
    await sqlOn(dbs.sink, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')");
    expect((await create('moods', definition)).status).toBe(201);
    await service.request('PUT', '/v1/pipelines/moods/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'moods');
  });

  it('replicates a generated column: the sink computes it from the same expression', async () => {
    await create('gen', {
      source: { connection: 'src', tables: ['public.gen'] },
      sink: { connection: 'dst' },
    });
    await service.request('PUT', '/v1/pipelines/gen/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'gen');
    await sqlOn(dbs.source, 'UPDATE gen SET a = 21 WHERE id = 2; INSERT INTO gen (id, a) VALUES (3, 30)');
    await waitConverged(dbs.source, dbs.sink, 'gen');
    const [column] = await sqlOn(
      dbs.sink,
      "SELECT attgenerated FROM pg_attribute WHERE attrelid = 'public.gen'::regclass AND attname = 'doubled'",
    );
    expect(column?.attgenerated).toBe('s');
    expect(await sqlOn(dbs.sink, 'SELECT id, doubled FROM gen ORDER BY id')).toEqual([
      { id: 1, doubled: 20 },
      { id: 2, doubled: 42 },
      { id: 3, doubled: 60 },
    ]);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/gen')).body.state === 'running',
      'running',
    );
  });
});
