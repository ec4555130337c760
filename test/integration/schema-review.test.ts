import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_PROJECT_ID } from '../../src/store/pool.js';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  tableDigest,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

// Schema review is about this service, not about a PostgreSQL version: the first cluster is enough.
const [cluster] = inject('pgClusters');

describe('schema review', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  const state = async (name: string) => (await service.request('GET', `/v1/pipelines/${name}`)).body.state;
  const waitState = (name: string, wanted: string) =>
    waitFor(async () => (await state(name)) === wanted, `${name} to be ${wanted}`);
  const sinkColumns = async (table: string) =>
    (
      await sqlOn(
        dbs.sink,
        `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
         WHERE attrelid = '${table}'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      )
    ).map((r) => `${r.name} ${r.type}`);

  /** A table with rows, replicated by a pipeline of its own with the given policy, streaming. */
  async function streaming(table: string, policy: 'review' | 'auto' | 'ignore', slot?: 'own') {
    await sqlOn(
      dbs.source,
      `CREATE TABLE ${table} (id integer PRIMARY KEY, a text, n integer NOT NULL DEFAULT 0);
       INSERT INTO ${table} SELECT i, 'a' || i, i FROM generate_series(1, 100) AS i;`,
    );
    const name = table.replaceAll('_', '-');
    const created = await service.request('POST', '/v1/pipelines', {
      name,
      source: { connection: 'src', tables: [`public.${table}`], ...(slot ? { slot } : {}) },
      sink: { connection: 'dst' },
      schema_policy: policy,
    });
    expect(created.body.schema_policy).toBe(policy);
    await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
    await waitFor(
      async () => (await service.request('GET', `/v1/pipelines/${name}/progress`)).body.phase === 'streaming',
      'streaming',
    );
    await waitConverged(dbs.source, dbs.sink, table);
    return name;
  }

  /** Writes, changes the table's shape, writes again; under review the pipeline then waits. */
  async function changeShape(table: string, ddl: string, after: string) {
    await sqlOn(dbs.source, `INSERT INTO ${table} (id, a) VALUES (1001, 'before')`);
    await sqlOn(dbs.source, ddl);
    await sqlOn(dbs.source, after);
  }

  async function proposal(name: string) {
    await waitState(name, 'pending_schema_approval');
    const res = await service.request('GET', `/v1/pipelines/${name}/schema/proposed`);
    expect(res.status).toBe(200);
    return res.body;
  }

  async function approve(name: string, id: string, table: string) {
    const res = await service.request('POST', `/v1/pipelines/${name}/schema/approve`, { proposal_id: id });
    expect(res).toMatchObject({ status: 200, body: { status: 'approved', decided_by: 'system' } });
    await waitState(name, 'running');
    await waitConverged(dbs.source, dbs.sink, table);
  }

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'schema');
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
  });
  afterAll(() => service?.stop());

  it('review: an added column with a default waits, holding the later rows, then applies on approval', async () => {
    const name = await streaming('t_add', 'review');
    await changeShape(
      't_add',
      "ALTER TABLE t_add ADD COLUMN extra text DEFAULT 'dflt'",
      "INSERT INTO t_add (id, a, extra) VALUES (1002, 'after', 'x')",
    );
    const p = await proposal(name);
    expect(p).toMatchObject({ table: 'public.t_add', status: 'pending' });
    expect(p.changes).toEqual([
      { kind: 'add_column', column: 'extra', type: 'text', nullable: true, existing_value: 'dflt' },
    ]);
    expect(p.ddl).toEqual([
      `ALTER TABLE "public"."t_add" ADD COLUMN "extra" text DEFAULT 'dflt'::text`,
      'ALTER TABLE "public"."t_add" ALTER COLUMN "extra" DROP DEFAULT',
    ]);
    expect(p.proposed_columns.map((c: { name: string }) => c.name)).toEqual(['id', 'a', 'n', 'extra']);
    // Applied up to the change, nothing of the new shape.
    expect(await sqlOn(dbs.sink, 'SELECT 1 FROM t_add WHERE id = 1001')).toHaveLength(1);
    expect(await sqlOn(dbs.sink, 'SELECT 1 FROM t_add WHERE id = 1002')).toHaveLength(0);
    const list = (await service.request('GET', '/v1/pipelines')).body;
    expect(list.find((x: { name: string }) => x.name === name).state).toBe('pending_schema_approval');
    await approve(name, p.id, 't_add');
    expect(await sinkColumns('t_add')).toEqual(['id integer', 'a text', 'n integer', 'extra text']);
    expect((await service.request('GET', `/v1/pipelines/${name}/schema/proposed`)).status).toBe(404);
  });

  it.each([
    [
      'a dropped column',
      't_drop',
      'ALTER TABLE t_drop DROP COLUMN a',
      'INSERT INTO t_drop (id) VALUES (1002)',
      [{ kind: 'drop_column', column: 'a' }],
      ['id integer', 'n integer'],
    ],
    [
      'a widened type',
      't_widen',
      'ALTER TABLE t_widen ALTER COLUMN n TYPE bigint',
      'INSERT INTO t_widen (id, n) VALUES (1002, 9000000000)',
      [{ kind: 'alter_type', column: 'n', from: 'integer', to: 'bigint', widening: true }],
      ['id integer', 'a text', 'n bigint'],
    ],
    [
      'a renamed column',
      't_rename',
      'ALTER TABLE t_rename RENAME COLUMN a TO b',
      "INSERT INTO t_rename (id, b) VALUES (1002, 'renamed')",
      [{ kind: 'rename_column', from: 'a', to: 'b' }],
      ['id integer', 'b text', 'n integer'],
    ],
    [
      'a new NOT NULL column',
      't_notnull',
      "ALTER TABLE t_notnull ADD COLUMN must text NOT NULL DEFAULT 'm'",
      "INSERT INTO t_notnull (id, must) VALUES (1002, 'given')",
      [{ kind: 'add_column', column: 'must', type: 'text', nullable: false, existing_value: 'm' }],
      ['id integer', 'a text', 'n integer', 'must text'],
    ],
  ])(
    'review: %s waits, then applies on approval with nothing lost',
    async (_label, table, ddl, after, changes, columns) => {
      const name = await streaming(table, 'review');
      await changeShape(table, ddl, after);
      const p = await proposal(name);
      expect(p.changes).toEqual(changes);
      await approve(name, p.id, table);
      expect(await sinkColumns(table)).toEqual(columns);
    },
  );

  it('review: a hostile column name becomes exactly that column and nothing else', async () => {
    const name = await streaming('t_hostile', 'review');
    await sqlOn(dbs.sink, 'CREATE TABLE x (v int)');
    await changeShape(
      't_hostile',
      `ALTER TABLE t_hostile ADD COLUMN "a""; DROP TABLE x;--" text`,
      `INSERT INTO t_hostile (id, "a""; DROP TABLE x;--") VALUES (1002, 'h')`,
    );
    const p = await proposal(name);
    await approve(name, p.id, 't_hostile');
    expect(await sinkColumns('t_hostile')).toContain('a"; DROP TABLE x;-- text');
    expect(await sqlOn(dbs.sink, "SELECT to_regclass('public.x') IS NOT NULL AS present")).toEqual([
      { present: true },
    ]);
  });

  it('refuses a stale proposal id, and decisions when nothing waits', async () => {
    const name = await streaming('t_stale', 'review');
    // The live feed tells a dashboard of the change waiting and of its decision.
    const feed = new WebSocket(`${service.url.replace('http', 'ws')}/v1/live`);
    const schemaMessages: { name: string; status: string; proposal_id: string | null }[] = [];
    feed.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'pipeline.schema' && message.name === name) schemaMessages.push(message);
    });
    await new Promise((resolve) => feed.once('open', resolve));
    await changeShape(
      't_stale',
      'ALTER TABLE t_stale ADD COLUMN z int',
      'INSERT INTO t_stale (id, z) VALUES (1002, 1)',
    );
    const p = await proposal(name);
    const stale = await service.request('POST', `/v1/pipelines/${name}/schema/approve`, {
      proposal_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(stale).toMatchObject({ status: 409, body: { code: 'STALE_PROPOSAL' } });
    expect(await state(name)).toBe('pending_schema_approval');
    // The transitions out of pending_schema_approval: resume, pause and start are refused.
    expect((await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'resume' })).status).toBe(
      409,
    );
    const approved = await service.request('POST', `/v1/pipelines/${name}/schema/approve`);
    expect(approved.status).toBe(200);
    await waitState(name, 'running');
    const again = await service.request('POST', `/v1/pipelines/${name}/schema/approve`, {
      proposal_id: p.id,
    });
    expect(again).toMatchObject({ status: 409, body: { code: 'INVALID_TRANSITION' } });
    expect((await service.request('GET', '/v1/pipelines/nope/schema/proposed')).status).toBe(404);
    await waitFor(async () => schemaMessages.length >= 2, 'the schema messages');
    feed.close();
    // Authentication is off: the feed is every project's, each message naming its project.
    const project_id = DEFAULT_PROJECT_ID;
    expect(schemaMessages).toEqual([
      { type: 'pipeline.schema', name, project_id, proposal_id: null, status: 'pending' },
      { type: 'pipeline.schema', name, project_id, proposal_id: p.id, status: 'decided' },
    ]);
  });

  it('reject: the sink keeps its columns and the others keep replicating', async () => {
    const name = await streaming('t_reject', 'review');
    await changeShape(
      't_reject',
      'ALTER TABLE t_reject ADD COLUMN secret text',
      "INSERT INTO t_reject (id, a, secret) VALUES (1002, 'kept', 's')",
    );
    const p = await proposal(name);
    const rejected = await service.request('POST', `/v1/pipelines/${name}/schema/reject`, {
      proposal_id: p.id,
    });
    expect(rejected).toMatchObject({ status: 200, body: { status: 'rejected' } });
    await waitState(name, 'running');
    await sqlOn(dbs.source, "UPDATE t_reject SET a = 'updated', secret = 't' WHERE id = 1");
    await waitFor(
      async () =>
        (await sqlOn(dbs.sink, "SELECT 1 FROM t_reject WHERE id = 1 AND a = 'updated'")).length === 1,
      'updates',
    );
    expect(await sinkColumns('t_reject')).toEqual(['id integer', 'a text', 'n integer']);
    const projection = 'SELECT id, a, n FROM t_reject ORDER BY id';
    expect(await sqlOn(dbs.sink, projection)).toEqual(await sqlOn(dbs.source, projection));
  });

  it('auto: compatible changes apply by themselves, others wait for review', async () => {
    // On a shared stream: the restart after the approval reads on from where the pipeline
    // acknowledged, not from its checkpoint, which the transaction the backfill's copy carried left
    // behind (read again, its older shape would be the dropped column added back).
    const name = await streaming('t_auto', 'auto');
    await changeShape(
      't_auto',
      `ALTER TABLE t_auto ADD COLUMN extra int DEFAULT 5; ALTER TABLE t_auto ALTER COLUMN n TYPE bigint;
       ALTER TABLE t_auto ADD COLUMN must text NOT NULL DEFAULT 'm'`,
      "INSERT INTO t_auto (id, extra, n, must) VALUES (1002, 7, 8000000000, 'given')",
    );
    await waitConverged(dbs.source, dbs.sink, 't_auto');
    expect(await state(name)).toBe('running');
    expect(await sinkColumns('t_auto')).toEqual([
      'id integer',
      'a text',
      'n bigint',
      'extra integer',
      'must text',
    ]);
    await sqlOn(dbs.source, 'ALTER TABLE t_auto DROP COLUMN a; INSERT INTO t_auto (id) VALUES (1003)');
    const dropped = await proposal(name);
    expect(dropped.changes).toEqual([{ kind: 'drop_column', column: 'a' }]);
    await approve(name, dropped.id, 't_auto');
    await sqlOn(
      dbs.source,
      'ALTER TABLE t_auto RENAME COLUMN extra TO extra2; INSERT INTO t_auto (id, extra2) VALUES (1004, 4)',
    );
    const renamed = await proposal(name);
    expect(renamed.changes).toEqual([{ kind: 'rename_column', from: 'extra', to: 'extra2' }]);
    await approve(name, renamed.id, 't_auto');
    expect(await sinkColumns('t_auto')).toEqual(['id integer', 'n bigint', 'extra2 integer', 'must text']);
  });

  it('ignore: the sink keeps its columns and nothing stops', async () => {
    const name = await streaming('t_ignore', 'ignore');
    await changeShape(
      't_ignore',
      'ALTER TABLE t_ignore ADD COLUMN extra text',
      "INSERT INTO t_ignore (id, a, extra) VALUES (1002, 'b', 'e')",
    );
    await waitFor(
      async () => (await sqlOn(dbs.sink, 'SELECT 1 FROM t_ignore WHERE id = 1002')).length === 1,
      'the row',
    );
    expect(await state(name)).toBe('running');
    expect(await sinkColumns('t_ignore')).toEqual(['id integer', 'a text', 'n integer']);
    expect((await tableDigest(dbs.sink, 't_ignore', 'id')).rows).toBe(102);
  });
});
