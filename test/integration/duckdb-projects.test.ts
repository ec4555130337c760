import { mkdir, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import { type ApiCaller, enableAuth } from '../support/auth-client.js';
import { AuthFixtures, organizationScope, signIn } from '../support/auth-fixtures.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

const SINK_ROWS = 'SELECT CAST(id AS VARCHAR) AS id, note FROM "public"."orders" ORDER BY id';

/** Projects A and B both name `duckdb:shared.duckdb` and write its `public.orders`. */
describe('DuckDB files of two projects', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let dataDir: string;
  let allowedDir: string;
  let admin: ApiCaller;
  const ids: Record<'a' | 'b', string> = { a: '', b: '' };

  const inProject = async (key: 'a' | 'b') => {
    const switched = await admin.call('PUT', '/v1/auth/session', { project: `project-${key}` });
    expect(switched.status, switched.text).toBe(200);
  };
  const rowsOf = async (path: string) => {
    const instance = await acquireInstance(path);
    const conn = await instance.connect();
    try {
      return (await conn.runAndReadAll(SINK_ROWS)).getRowObjectsJS();
    } finally {
      conn.closeSync();
      await releaseInstance(path);
    }
  };

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'duckdb_projects');
    await sqlOn(
      dbs.source,
      `CREATE SCHEMA a; CREATE TABLE a.orders (id int PRIMARY KEY, note text);
       INSERT INTO a.orders SELECT g, 'a' || g FROM generate_series(1, 5) g;
       CREATE SCHEMA b; CREATE TABLE b.orders (id int PRIMARY KEY, note text);
       INSERT INTO b.orders VALUES (1, 'b overwrote a');`,
    );
    dataDir = await mkdtemp(join(tmpdir(), 'duckdb-projects-'));
    allowedDir = join(dataDir, 'allowed');
    await mkdir(allowedDir);
    const config = enableAuth(testConfig(dbs.store, dataDir));
    service = await startTestService({
      ...config,
      connections: { ...config.connections, duckdbDirs: [allowedDir] },
    });
    const fixtures = await AuthFixtures.open(dbs.store);
    ids.a = await fixtures.project('project-a');
    ids.b = await fixtures.project('project-b');
    admin = await signIn(
      service.url,
      await fixtures.userWith('root@example.com', 'admin', organizationScope),
    );
  });
  afterAll(async () => {
    for (const key of ['a', 'b'] as const) {
      await inProject(key).catch(() => undefined);
      await admin?.call('PUT', '/v1/pipelines/orders/state', { state: 'stop' });
    }
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('writes the same relative name of two projects to two files', async () => {
    for (const key of ['a', 'b'] as const) {
      await inProject(key);
      for (const body of [
        { name: 'src', type: 'postgres', dsn: dbs.source },
        { name: 'wh', type: 'duckdb', dsn: 'duckdb:shared.duckdb' },
      ]) {
        const created = await admin.call('POST', '/v1/connections', body);
        expect(created.status, created.text).toBe(201);
      }
      const pipeline = await admin.call('POST', '/v1/pipelines', {
        name: 'orders',
        source: { connection: 'src', tables: [`${key}.orders`] },
        sink: { connection: 'wh', properties: { table_id: 'public.orders' } },
      });
      expect(pipeline.status, pipeline.text).toBe(201);
      const started = await admin.call('PUT', '/v1/pipelines/orders/state', { state: 'start' });
      expect(started.status, started.text).toBe(200);
    }
    const real = await realpath(dataDir);
    const fileOf = (key: 'a' | 'b') => join(real, 'duckdb', ids[key], 'shared.duckdb');
    const expectA = [1, 2, 3, 4, 5].map((g) => ({ id: String(g), note: `a${g}` }));
    await waitFor(
      async () => JSON.stringify(await rowsOf(fileOf('a')).catch(() => [])) === JSON.stringify(expectA),
      "project A's rows in its own file",
    );
    await waitFor(
      async () =>
        JSON.stringify(await rowsOf(fileOf('b')).catch(() => [])) ===
        JSON.stringify([{ id: '1', note: 'b overwrote a' }]),
      "project B's rows in its own file",
    );
    // Nothing was written where the files of both used to be.
    await expect(stat(join(real, 'duckdb', 'shared.duckdb'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await rowsOf(fileOf('a'))).toEqual(expectA);
  }, 120_000);

  it("refuses project B a DSN naming A's files, or files outside its own directory", async () => {
    await inProject('b');
    for (const dsn of [
      `duckdb://${allowedDir}/${ids.a}/shared.duckdb`,
      `duckdb://${allowedDir}/shared.duckdb`,
      `duckdb:${ids.a}/shared.duckdb`,
      'duckdb:../shared.duckdb',
    ]) {
      const refused = await admin.call('POST', '/v1/connections', { name: 'theirs', type: 'duckdb', dsn });
      expect(refused.status, dsn).toBe(422);
      expect(refused.body.code).toBe('INVALID_DSN');
    }
    const own = await admin.call('POST', '/v1/connections', {
      name: 'mine',
      type: 'duckdb',
      dsn: `duckdb://${allowedDir}/${ids.b}/shop.duckdb`,
    });
    expect(own.status, own.text).toBe(201);
  });
});
