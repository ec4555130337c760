import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type replicationDatabases,
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('a schema decision holds until the source changes that column again', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const state = async () => (await service.request('GET', '/v1/pipelines/held')).body.state;
  const waitState = (wanted: string) =>
    waitFor(async () => (await state()) === wanted, `held to be ${wanted}`);
  const pending = async () => {
    await waitState('pending_schema_approval');
    return (await service.request('GET', '/v1/pipelines/held/schema/proposed')).body;
  };
  const sinkColumns = async () =>
    (
      await sqlOn(
        dbs.sink,
        `SELECT attname || ' ' || format_type(atttypid, atttypmod) AS c FROM pg_attribute
         WHERE attrelid = 'public.held'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      )
    ).map((r) => r.c);

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'decisions_hold',
      'CREATE TABLE held (id int PRIMARY KEY, a text); INSERT INTO held VALUES (1, $$x$$)',
    ));
    await startConvergedPipeline(service, dbs, 'held', ['public.held'], { schema_policy: 'review' });
  });
  afterAll(() => service?.stop());

  it('does not propose a rejected column again with the next change of the table', async () => {
    await sqlOn(dbs.source, 'ALTER TABLE held ADD COLUMN b integer; INSERT INTO held VALUES (2, $$y$$, 2)');
    const first = await pending();
    expect(first.changes).toMatchObject([{ kind: 'add_column', column: 'b' }]);
    expect((await service.request('POST', '/v1/pipelines/held/schema/reject', {})).status).toBe(200);
    await waitState('running');

    await sqlOn(
      dbs.source,
      'ALTER TABLE held ADD COLUMN c text; INSERT INTO held VALUES (3, $$z$$, 3, $$c3$$)',
    );
    const second = await pending();
    expect(second.changes).toEqual([expect.objectContaining({ kind: 'add_column', column: 'c' })]);
    expect(second.proposed_columns.map((c: { name: string }) => c.name)).toEqual(['id', 'a', 'c']);
    expect((await service.request('POST', '/v1/pipelines/held/schema/approve', {})).status).toBe(200);
    await waitState('running');
    await waitFor(
      async () => (await sqlOn(dbs.sink, 'SELECT c FROM held WHERE id = 3'))[0]?.c === 'c3',
      'row 3',
    );
    expect(await sinkColumns()).toEqual(['id integer', 'a text', 'c text']);

    // Ordinary writes go on without another review.
    await sqlOn(dbs.source, "INSERT INTO held VALUES (4, 'w', 4, 'c4')");
    await waitFor(
      async () => (await sqlOn(dbs.sink, 'SELECT 1 FROM held WHERE id = 4')).length === 1,
      'row 4',
    );
    expect(await state()).toBe('running');
  });

  it('asks again once the source changes the rejected column', async () => {
    await sqlOn(
      dbs.source,
      "ALTER TABLE held ALTER COLUMN b TYPE bigint; INSERT INTO held VALUES (5, 'v', 5, 'c5')",
    );
    const again = await pending();
    expect(again.changes).toEqual([
      expect.objectContaining({ kind: 'add_column', column: 'b', type: 'bigint' }),
    ]);
  });
});
