import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationDatabases, sqlOn } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('POST /v1/apply: the checks that reach a source', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const document = () => ({
    connections: [
      { name: 'src', type: 'postgres', dsn: dbs.source },
      { name: 'dst', type: 'postgres', dsn: dbs.sink },
    ],
    pipelines: [
      { name: 'keyed', source: { connection: 'src', tables: ['public.keyed'] }, sink: { connection: 'dst' } },
      {
        name: 'ghost',
        source: { connection: 'src', tables: ['public.keyed_too', 'public.ghost'] },
        sink: { connection: 'dst', properties: { target_schema: 'other' } },
      },
      { name: 'loose', source: { connection: 'src', tables: ['public.loose'] }, sink: { connection: 'dst' } },
    ],
  });
  const apply = (body: unknown, query = '') => service.request('POST', `/v1/apply${query}`, body);

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'apply_live');
    await sqlOn(
      dbs.source,
      `CREATE TABLE keyed (id int PRIMARY KEY, v int);
       CREATE TABLE keyed_too (id int PRIMARY KEY, v int);
       CREATE TABLE loose (id int, v int);`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(() => service?.stop());

  it('reports a missing table and a table without a key at their paths, in the dry run too, and writes nothing', async () => {
    const expected = [
      {
        path: 'pipelines[1].source.tables[1]',
        message: expect.stringMatching(/^public\.ghost does not exist/),
      },
      {
        path: 'pipelines[2].source.tables[0]',
        message: expect.stringMatching(/^public\.loose has no primary key/),
      },
    ];
    for (const query of ['?dry_run=true', '']) {
      const res = await apply(document(), query);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.details.problems).toEqual(expected);
      expect(res.body.error).toContain('the document has 2 problems');
      expect(res.body.error).toContain('pipelines[1].source.tables[1]: public.ghost does not exist');
      expect((await service.request('GET', '/v1/pipelines')).body).toEqual([]);
      expect((await service.request('GET', '/v1/connections')).body).toEqual([]);
    }
  });

  it('checks with the connections the document changes, and says so when a source cannot be reached', async () => {
    const fixed = document();
    fixed.pipelines = [fixed.pipelines[0] as (typeof fixed.pipelines)[number]];
    const created = await apply(fixed);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    // The stored 'src' reaches the tables; the document moves it to a server that is not there.
    const moved = document();
    (moved.connections[0] as { dsn: string }).dsn = 'postgres://app:pw@127.0.0.1:1/nowhere';
    const dry = await apply(moved, '?dry_run=true');
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const note =
      "source connection 'src' could not be reached: its tables, keys and privileges are checked when the pipeline starts";
    expect(dry.body.pipelines).toEqual([
      { name: 'keyed', result: 'unchanged' },
      { name: 'ghost', result: 'created', notes: [note] },
      { name: 'loose', result: 'created', notes: [note] },
    ]);
    expect((await service.request('GET', '/v1/pipelines')).body.map((p: { name: string }) => p.name)).toEqual(
      ['keyed'],
    );
  });
});
