import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase, freePort } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

interface Check {
  name: string;
  ok: boolean;
  message: string;
}

const PASSWORD = 'Tq7-very-secret-pw';

describe.each(inject('pgClusters'))('connection test API on $label', (cluster) => {
  let service: TestService;
  let sourceDsn: string;

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'connection_test_api');
    service = await startTestService(testConfig(storeUrl));
    // A role of its own with a password, so that the answer can be searched for it.
    const admin = new pg.Client({ connectionString: cluster.adminUrl });
    await admin.connect();
    await admin.query('DROP ROLE IF EXISTS conn_tester');
    await admin.query(`CREATE ROLE conn_tester LOGIN REPLICATION PASSWORD '${PASSWORD}'`);
    // The test clusters trust local logins: a role that may not log in is what gets refused.
    await admin.query('DROP ROLE IF EXISTS conn_refused');
    await admin.query('CREATE ROLE conn_refused NOLOGIN');
    await admin.end();
    const url = new URL(cluster.adminUrl);
    url.username = 'conn_tester';
    url.password = PASSWORD;
    sourceDsn = url.toString();
  });
  afterAll(() => service?.stop());

  const test = (body: unknown) => service.request('POST', '/v1/connections/test', body);
  const check = (checks: Check[], name: string) => checks.find((c) => c.name === name);

  it('finds a logical-replication source usable, checking each condition', async () => {
    const res = await test({ type: 'postgres', dsn: sourceDsn });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    const names = res.body.checks.map((c: Check) => c.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'reach',
        'server_version',
        'wal_level',
        'replication_slots',
        'wal_senders',
        'replication_role',
        'database_connect',
      ]),
    );
    expect(check(res.body.checks, 'server_version')?.message).toMatch(/^PostgreSQL \d+/);
    expect(check(res.body.checks, 'replication_role')?.message).toContain('REPLICATION attribute');
  });

  it('finds a source with wal_level=replica not usable, saying what to do (200, not an error)', async () => {
    const res = await test({ type: 'postgres', dsn: 'postgres://postgres@127.0.0.1:5432/postgres' });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    const wal = check(res.body.checks, 'wal_level');
    expect(wal?.ok).toBe(false);
    expect(wal?.message).toContain('set wal_level = logical');
    expect(check(res.body.checks, 'reach')?.ok).toBe(true);
    expect(res.body.as).toBe('source');
  });

  it('judges a postgres connection as a sink when asked: wal_level is then no condition', async () => {
    const dsn = 'postgres://postgres@127.0.0.1:5432/postgres';
    const res = await test({ type: 'postgres', dsn, as: 'sink' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, as: 'sink' });
    expect(res.body.checks.map((c: Check) => c.name).sort()).toEqual([
      'database_connect',
      'reach',
      'server_version',
    ]);
    const created = await service.request('POST', '/v1/connections', {
      name: 'replica-level',
      type: 'postgres',
      dsn,
    });
    expect(created.status).toBe(201);
    const asSource = await service.request('POST', '/v1/connections/replica-level/test');
    expect(asSource.body).toMatchObject({ ok: false, as: 'source' });
    const asSink = await service.request('POST', '/v1/connections/replica-level/test?as=sink');
    expect(asSink.body).toMatchObject({ ok: true, as: 'sink' });
    expect((await service.request('POST', '/v1/connections/replica-level/test?as=both')).status).toBe(400);
    expect((await test({ type: 'redis', dsn: 'redis://127.0.0.1:6379', as: 'source' })).body.as).toBe('sink');
  });

  it('reports a host:port where nothing listens as not reached', async () => {
    const port = await freePort();
    const res = await test({
      type: 'postgres',
      dsn: `postgres://conn_tester:${PASSWORD}@127.0.0.1:${port}/postgres`,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: false, checks: [{ name: 'reach', ok: false }] });
    expect(res.body.checks[0].message).toMatch(/^Could not reach/);
  });

  it('never shows the password, also when the login is refused', async () => {
    const url = new URL(sourceDsn);
    url.username = 'conn_refused';
    const refused = await test({ type: 'postgres', dsn: url.toString() });
    expect(refused.status).toBe(200);
    expect(refused.body.ok).toBe(false);
    expect(refused.body.checks[0].message).toContain('not permitted to log in');
    const good = await test({ type: 'postgres', dsn: sourceDsn });
    for (const res of [refused, good]) expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
  });

  it('reaches a Redis sink and a MySQL sink', async () => {
    const redis = await test({ type: 'redis', dsn: 'redis://127.0.0.1:6379/0' });
    expect(redis.status).toBe(200);
    expect(redis.body.ok).toBe(true);
    expect(check(redis.body.checks, 'server_version')?.message).toMatch(/^Redis \d/);
    const mysql = await test({ type: 'mysql', dsn: 'mysql://root@127.0.0.1:3306/mysql' });
    expect(mysql.status).toBe(200);
    expect(mysql.body.ok).toBe(true);
    expect(check(mysql.body.checks, 'server_version')?.message).toMatch(/^MySQL \d/);
  });

  it('tests a stored connection by name, and answers 404 for an unknown one', async () => {
    const created = await service.request('POST', '/v1/connections', {
      name: 'tested-source',
      type: 'postgres',
      dsn: sourceDsn,
    });
    expect(created.status).toBe(201);
    const res = await service.request('POST', '/v1/connections/tested-source/test');
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
    const masked = await test({ name: 'tested-source', type: 'postgres', dsn: created.body.dsn });
    expect(masked.status).toBe(200);
    expect(masked.body.ok).toBe(true);
    const missing = await service.request('POST', '/v1/connections/no-such-connection/test');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('NOT_FOUND');
  });

  it('refuses a bad body with 400, and a DSN the service refuses as creating it would', async () => {
    const noDsn = await test({ type: 'postgres' });
    expect(noDsn.status).toBe(400);
    expect(noDsn.body.error).toMatch(/^dsn: is required/);
    const unknownField = await test({ type: 'postgres', dsn: sourceDsn, extra: 1 });
    expect(unknownField.status).toBe(400);
    const badName = await test({ name: '-bad', type: 'postgres', dsn: sourceDsn });
    expect(badName.status).toBe(400);
    const fileHost = await test({ type: 'postgres', dsn: 'postgres://postgres@/postgres?host=/tmp' });
    const created = await service.request('POST', '/v1/connections', {
      name: 'file-host',
      type: 'postgres',
      dsn: 'postgres://postgres@/postgres?host=/tmp',
    });
    expect(fileHost.status).toBe(created.status);
    expect(fileHost.status).toBe(422);
    expect(fileHost.body.code).toBe(created.body.code);
  });

  it('lists the pipelines that use each connection, as source or sink', async () => {
    const port = await freePort();
    for (const [name, type, dsn] of [
      ['far-source', 'postgres', `postgres://u@127.0.0.1:${port}/x`],
      ['shared-sink', 'redis', 'redis://127.0.0.1:6379/0'],
    ]) {
      expect((await service.request('POST', '/v1/connections', { name, type, dsn })).status).toBe(201);
    }
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'uses-both',
      source: { connection: 'far-source', tables: ['public.items'] },
      sink: { connection: 'shared-sink' },
    });
    expect(created.status).toBe(201);
    const list = await service.request('GET', '/v1/connections');
    const usedBy = (name: string) => list.body.find((c: { name: string }) => c.name === name)?.used_by;
    expect(usedBy('far-source')).toEqual([{ pipeline: 'uses-both', state: 'stopped', as: 'source' }]);
    expect(usedBy('shared-sink')).toEqual([{ pipeline: 'uses-both', state: 'stopped', as: 'sink' }]);
    expect(usedBy('tested-source')).toEqual([]);
  });
});
