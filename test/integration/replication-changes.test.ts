import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { availableBinDirs, createDatabase, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import {
  replicationDatabases,
  slotNameOf,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

// Behaviour that does not depend on the PostgreSQL version runs on the first cluster only.
const [cluster] = inject('pgClusters');

describe('pipelines facing changes: definitions, sources, slots', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let replicaCluster: PgCluster;

  const converged = (table: string) => waitConverged(dbs.source, dbs.sink, table);
  const pipeline = async (name: string) => (await service.request('GET', `/v1/pipelines/${name}`)).body;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'changes');
    const binDir = availableBinDirs()[0]?.binDir as string;
    replicaCluster = await startPgCluster('replica', binDir, ['wal_level=replica']);
    await sqlOn(
      dbs.source,
      `CREATE TABLE a (id int PRIMARY KEY, v text);
       CREATE TABLE b (id int PRIMARY KEY, v text);
       CREATE TABLE keyless (v text);
       INSERT INTO a SELECT i, 'a' || i FROM generate_series(1, 500) i;
       INSERT INTO b SELECT i, 'b' || i FROM generate_series(1, 700) i;`,
    );
    // Any retained WAL is over this threshold: every streaming pipeline here shows the warning.
    service = await startTestService({ ...testConfig(dbs.store), slotWalWarningBytes: 1 });
    const replicaSource = await createDatabase(replicaCluster.adminUrl, 'plain');
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['dst', dbs.sink],
      ['replica-level', replicaSource],
      ['down', 'postgres://u:p@127.0.0.1:1/nowhere'],
    ] as const) {
      expect((await service.request('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(
        201,
      );
    }
  });
  afterAll(async () => {
    await service?.stop();
    await replicaCluster?.stop();
  });

  it('refuses at create a table without a key or missing, saying what to do', async () => {
    const res = await service.request('POST', '/v1/pipelines', {
      name: 'bad-tables',
      source: { connection: 'src', tables: ['public.a', 'public.keyless', 'public.nope'] },
      sink: { connection: 'dst' },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.error).toContain('public.keyless');
    expect(res.body.error).toMatch(/primary key|REPLICA IDENTITY/);
    expect(res.body.error).toContain('public.nope');
    expect((await service.request('GET', '/v1/pipelines/bad-tables')).status).toBe(404);
  });

  it('refuses a source whose wal_level is not logical', async () => {
    const res = await service.request('POST', '/v1/pipelines', {
      name: 'not-logical',
      source: { connection: 'replica-level', tables: ['public.t'] },
      sink: { connection: 'dst' },
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toContain('wal_level');
    expect(res.body.error).toContain('logical');
  });

  it('accepts a source it cannot reach, and keeps trying to start, showing the reason', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'unreachable',
      source: { connection: 'down', tables: ['public.t'] },
      sink: { connection: 'dst' },
    });
    expect(created.status).toBe(201);
    expect((await service.request('PUT', '/v1/pipelines/unreachable/state', { state: 'start' })).status).toBe(
      200,
    );
    const waiting = await waitFor(async () => {
      const p = await pipeline('unreachable');
      return p.state === 'starting' && p.error ? p : undefined;
    }, 'the start to be retried');
    expect(waiting.error).toMatch(/ECONNREFUSED/);
    const pause = await service.request('PUT', '/v1/pipelines/unreachable/state', { state: 'pause' });
    expect(pause.status).toBe(409);
    // The spec's table has no stop while starting: the start ends by itself (failed after its
    // retries), and a pipeline that should not run any more can be deleted meanwhile.
    const stop = await service.request('PUT', '/v1/pipelines/unreachable/state', { state: 'stop' });
    expect(stop).toMatchObject({ status: 409, body: { code: 'INVALID_TRANSITION' } });
    expect((await pipeline('unreachable')).state).toBe('starting');
    expect((await service.request('DELETE', '/v1/pipelines/unreachable')).status).toBe(204);
  });

  it('publishes states and live figures on the /v1/live WebSocket', async () => {
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}/v1/live`);
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    await service.request('POST', '/v1/pipelines', {
      name: 'watched',
      source: { connection: 'src', tables: ['public.b'] },
      sink: { connection: 'dst', properties: { target_schema: 'watched' } },
    });
    await service.request('PUT', '/v1/pipelines/watched/state', { state: 'start' });
    await waitFor(
      async () =>
        messages.some((m) => m.type === 'pipeline.stats' && m.name === 'watched' && m.phase === 'streaming'),
      'live figures',
    );
    expect(messages[0]).toMatchObject({ type: 'hello' });
    const states = messages
      .filter((m) => m.type === 'pipeline.state' && m.name === 'watched')
      .map((m) => m.state);
    expect(states).toEqual(expect.arrayContaining(['starting', 'running']));
    socket.close();
    await fetch(`${service.url}/v1/pipelines/watched`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
  });

  it('hot-reloads a definition: a table added is snapshotted then streamed, a table removed is no longer applied', async () => {
    await service.request('POST', '/v1/pipelines', {
      name: 'reload',
      source: { connection: 'src', tables: ['public.a'] },
      sink: { connection: 'dst' },
    });
    await service.request('PUT', '/v1/pipelines/reload/state', { state: 'start' });
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/reload/progress')).body.phase === 'streaming',
      'streaming',
    );
    await sqlOn(dbs.source, "INSERT INTO a VALUES (1001, 'x'); UPDATE b SET v = 'before add' WHERE id = 1");
    await converged('a');

    const replaced = await service.request('PUT', '/v1/pipelines/reload', {
      source: { connection: 'src', tables: ['public.a', 'public.b'] },
      sink: { connection: 'dst', properties: { batch_max_events: '7' } },
    });
    expect(replaced).toMatchObject({ status: 200, body: { generation: 2, state: 'running' } });
    await sqlOn(dbs.source, "INSERT INTO b VALUES (1001, 'after add'); INSERT INTO a VALUES (1002, 'y')");
    await converged('b');
    await converged('a');
    const progress = (await service.request('GET', '/v1/pipelines/reload/progress')).body;
    expect(progress.tables.map((t: { table: string; status: string }) => [t.table, t.status])).toEqual([
      ['public.a', 'streaming'],
      ['public.b', 'streaming'],
    ]);

    await service.request('PUT', '/v1/pipelines/reload', {
      source: { connection: 'src', tables: ['public.b'] },
      sink: { connection: 'dst' },
    });
    await sqlOn(
      dbs.source,
      "INSERT INTO a VALUES (1003, 'not replicated'); INSERT INTO b VALUES (1002, 'still')",
    );
    await converged('b');
    expect(await sqlOn(dbs.sink, 'SELECT 1 FROM a WHERE id = 1003')).toHaveLength(0);
    const reloaded = await pipeline('reload');
    expect(reloaded.state).toBe('running');
    expect(reloaded.warning).toMatch(/keeps .* of WAL for this pipeline's slot/);
    expect(
      await sqlOn(
        dbs.source,
        "SELECT 1 FROM pg_publication_tables WHERE tablename = 'a' AND pubname LIKE 'replicator_%'",
      ),
    ).toHaveLength(0);
  });

  it('fails, never recreating it, when its slot disappears', async () => {
    // It reads the shared stream of its connection: that stream's slot is the one that disappears.
    const before = await pipeline('reload');
    expect(before.source.slot).toBe('shared');
    const slot = await slotNameOf(dbs.store, before);
    await sqlOn(
      dbs.source,
      `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '${slot}' AND active_pid IS NOT NULL`,
    );
    await waitFor(async () => {
      try {
        await sqlOn(dbs.source, `SELECT pg_drop_replication_slot('${slot}')`);
        return true;
      } catch {
        return false;
      }
    }, 'the slot to be dropped');
    const failed = await waitFor(async () => {
      const p = await pipeline('reload');
      return p.state === 'failed' ? p : undefined;
    }, 'the pipeline to fail');
    expect(failed.error).toContain('resync');
    expect(
      await sqlOn(dbs.source, `SELECT 1 FROM pg_replication_slots WHERE slot_name = '${slot}'`),
    ).toHaveLength(0);
    const start = await service.request('PUT', '/v1/pipelines/reload/state', { state: 'start' });
    expect(start.status).toBe(200);
    await waitFor(async () => (await pipeline('reload')).state === 'failed', 'the pipeline to fail again');
    expect(
      await sqlOn(dbs.source, `SELECT 1 FROM pg_replication_slots WHERE slot_name = '${slot}'`),
    ).toHaveLength(0);
  });

  it('keeps a pipeline whose slot cannot be dropped (409), unless forced; names and lists the slot left behind', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'orphan',
      // A slot of its own: the one its deletion drops (a shared stream's goes with its last pipeline).
      source: { connection: 'src', tables: ['public.b'], slot: 'own' },
      sink: { connection: 'dst', properties: { target_schema: 'orphan' } },
    });
    expect(created.status).toBe(201);
    const slot = `replicator_${created.body.id.replaceAll('-', '')}`;
    await service.request('PUT', '/v1/pipelines/orphan/state', { state: 'start' });
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/orphan/progress')).body.phase === 'streaming',
      'streaming',
    );
    await sqlOn(cluster?.adminUrl as string, 'ALTER DATABASE changes_src ALLOW_CONNECTIONS false');
    // The source out of reach: the service's session left open on it goes too.
    await sqlOn(
      cluster?.adminUrl as string,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'changes_src' AND application_name LIKE 'replicator%'",
    );
    try {
      const refused = await service.request('DELETE', '/v1/pipelines/orphan');
      expect(refused).toMatchObject({ status: 409, body: { code: 'SLOT_NOT_DROPPED' } });
      expect(refused.body.error).toContain(`pg_drop_replication_slot('${slot}')`);
      expect(refused.body.error).toContain("connection 'src'");
      expect(refused.body.error).toContain('?force=true');
      expect((await pipeline('orphan')).state).toBe('stopped');
      const forced = await fetch(`${service.url}/v1/pipelines/orphan?force=true`, {
        method: 'DELETE',
        headers: { 'content-type': 'application/json' },
      });
      expect(forced.status).toBe(204);
      expect(forced.headers.get('x-orphaned-slot')).toBe(slot);
      expect(await forced.text()).toBe('');
    } finally {
      await sqlOn(cluster?.adminUrl as string, 'ALTER DATABASE changes_src ALLOW_CONNECTIONS true');
    }
    expect((await service.request('GET', '/v1/pipelines/orphan')).status).toBe(404);
    expect(
      await sqlOn(dbs.source, `SELECT 1 FROM pg_replication_slots WHERE slot_name = '${slot}'`),
    ).toHaveLength(1);
    const orphan = {
      slot,
      pipeline: 'orphan',
      drop_statement: `SELECT pg_drop_replication_slot('${slot}')`,
    };
    const view = await service.request('GET', '/v1/connections/src');
    expect(view.body.orphaned_slots).toEqual([expect.objectContaining(orphan)]);
    const listed = (await service.request('GET', '/v1/connections')).body;
    expect(listed.find((c: any) => c.name === 'src').orphaned_slots).toEqual([
      expect.objectContaining(orphan),
    ]);
    expect(listed.find((c: any) => c.name === 'dst').orphaned_slots).toEqual([]);

    const dropped = await service.request('DELETE', `/v1/connections/src/orphaned-slots/${slot}`);
    expect(dropped.status).toBe(204);
    expect(
      await sqlOn(dbs.source, `SELECT 1 FROM pg_replication_slots WHERE slot_name = '${slot}'`),
    ).toHaveLength(0);
    expect((await service.request('GET', '/v1/connections/src')).body.orphaned_slots).toEqual([]);
    const again = await service.request('DELETE', `/v1/connections/src/orphaned-slots/${slot}`);
    expect(again).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });

  it('restarts running pipelines on a replaced connection, and fails them when it is deleted by force', async () => {
    await service.request('POST', '/v1/connections', { name: 'src2', type: 'postgres', dsn: dbs.source });
    await service.request('POST', '/v1/pipelines', {
      name: 'conn-change',
      source: { connection: 'src2', tables: ['public.b'] },
      sink: { connection: 'dst', properties: { target_schema: 'conn_change' } },
    });
    await service.request('PUT', '/v1/pipelines/conn-change/state', { state: 'start' });
    const streaming = async () =>
      (await service.request('GET', '/v1/pipelines/conn-change/progress')).body.phase === 'streaming';
    await waitFor(streaming, 'streaming');
    const replaced = await service.request('PUT', '/v1/connections/src2', {
      type: 'postgres',
      dsn: `${dbs.source}?sslmode=disable`,
    });
    expect(replaced.status).toBe(200);
    await sqlOn(dbs.source, "INSERT INTO b VALUES (7001, 'after the connection changed')");
    await waitFor(
      async () => (await sqlOn(dbs.sink, 'SELECT 1 FROM conn_change.b WHERE id = 7001')).length === 1,
      'the row through the new connection',
    );
    const forced = await fetch(`${service.url}/v1/connections/src2?force=true`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(forced.status).toBe(204);
    const failed = await waitFor(async () => {
      const p = await pipeline('conn-change');
      return p.state === 'failed' ? p : undefined;
    }, 'the pipeline to fail');
    expect(failed.error).toContain("connection 'src2' does not exist");
  });
});
