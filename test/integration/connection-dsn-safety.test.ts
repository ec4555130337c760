import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

// The first cluster is enough: nothing here depends on the server version.
const cluster = inject('pgClusters')[0];

describe('connection DSNs cannot reach the service machine', () => {
  let service: TestService;
  let storeUrl: string;
  let files: string;

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster?.adminUrl as string, 'dsn_safety');
    service = await startTestService(testConfig(storeUrl));
    files = mkdtempSync(join(tmpdir(), 'dsn-safety-'));
    writeFileSync(join(files, 'exists.pem'), 'not a certificate');
    spawnSync('mkfifo', [join(files, 'fifo')]);
  });
  afterAll(() => service?.stop());

  const create = (name: string, dsn: string, extra: object = {}) =>
    service.request('POST', '/v1/connections', { name, type: 'postgres', dsn, ...extra });

  async function storeQuery(text: string, values: unknown[] = []) {
    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    try {
      return (await client.query(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  it('refuses file parameters at once, with the same answer whether the file exists or not', async () => {
    const answers = new Set<string>();
    for (const path of ['/dev/zero', join(files, 'fifo'), join(files, 'exists.pem'), '/no/such/file']) {
      for (const key of ['sslrootcert', 'sslcert', 'sslkey']) {
        // Opening the FIFO (no writer) would block for good, and reading /dev/zero would not end:
        // a service that touched the file never answers, and the test's own timeout says so.
        const res = await create('f', `postgres://u@db.example/db?sslmode=verify-full&${key}=${path}`);
        expect(res.status).toBe(422);
        expect(res.body.code).toBe('INVALID_DSN');
        expect(res.body.error).toContain(`'${key}'`);
        expect(res.body.error).not.toContain(path);
        answers.add(`${key}:${res.body.error}`);
      }
    }
    expect(answers.size).toBe(3);
    expect((await service.request('GET', '/v1/health')).status).toBe(200);
  });

  it.each([
    [
      'a Unix socket as host parameter',
      'postgres://postgres@/postgres?host=/tmp',
      'connections.allow_unix_sockets',
    ],
    [
      'a Unix socket as encoded host',
      'postgres://postgres@%2Ftmp/postgres',
      'connections.allow_unix_sockets',
    ],
    ['passfile', 'postgres://u@h/db?passfile=/root/.pgpass', "'passfile'"],
    ['service', 'postgres://u@h/db?service=prod', "'service'"],
    ['servicefile', 'postgres://u@h/db?servicefile=/etc/pg_service.conf', "'servicefile'"],
    ['options', 'postgres://u@h/db?options=-c%20log_statement%3Dall', "'options'"],
    ['replication', 'postgres://u@h/db?replication=database', "'replication'"],
    ['an encoded NUL in the user', 'postgres://u%00replication%00database@h/db', 'control character'],
    ['an encoded CR LF in the database', 'postgres://u@h/db%0D%0Ax', 'control character'],
    ['a raw NUL', 'postgres://u@h/db\u0000', 'control character'],
    ['a raw line feed', 'postgres://u@h/\ndb', 'control character'],
  ])('refuses %s with 422 INVALID_DSN', async (_what, dsn, message) => {
    const res = await create('refused', dsn);
    expect(res).toMatchObject({ status: 422, body: { code: 'INVALID_DSN' } });
    expect(res.body.error).toContain(message);
    expect((await service.request('GET', '/v1/connections/refused')).status).toBe(404);
  });

  it('keeps a masked password only for the same host, port, database and user', async () => {
    expect((await create('victim', 'postgres://app:hunter2@db.internal:5432/prod')).status).toBe(201);
    for (const dsn of [
      'postgres://app:****@attacker.example:5432/prod',
      'postgres://app:****@db.internal:6543/prod',
      'postgres://app:****@db.internal:5432/other',
      'postgres://root:****@db.internal:5432/prod',
    ]) {
      const res = await service.request('PUT', '/v1/connections/victim', { type: 'postgres', dsn });
      expect(res).toMatchObject({ status: 422, body: { code: 'INVALID_DSN' } });
      expect(res.body.error).toContain('give it again');
    }
    const stored = await storeQuery("SELECT dsn FROM connections WHERE name = 'victim'");
    expect(stored[0].dsn).toBe('postgres://app@db.internal:5432/prod');
    const same = await service.request('PUT', '/v1/connections/victim', {
      type: 'postgres',
      dsn: 'postgres://app:****@DB.internal:5432/prod?sslmode=require',
    });
    expect(same.status).toBe(200);
    const moved = await service.request('PUT', '/v1/connections/victim', {
      type: 'postgres',
      dsn: 'postgres://app:new-secret@elsewhere.internal:5432/prod',
    });
    expect(moved.status).toBe(200);
    expect(moved.body.dsn).toBe('postgres://app:****@elsewhere.internal:5432/prod');
  });

  it('seals sslpassword like the password and masks it', async () => {
    const res = await create('keyed', 'postgres://u:pw@h/db?sslmode=require&sslpassword=key-passphrase');
    expect(res.status).toBe(201);
    expect(res.body.dsn).toBe('postgres://u:****@h/db?sslmode=require&sslpassword=****');
    const rows = await storeQuery("SELECT * FROM connections WHERE name = 'keyed'");
    expect(JSON.stringify(rows)).not.toContain('key-passphrase');
    expect(rows[0].secret_names).toEqual(['sslpassword']);
    const again = await service.request('GET', '/v1/connections/keyed');
    expect(JSON.stringify(again.body)).not.toContain('key-passphrase');
  });

  it('refuses a stored row from before the allow-list at every connect', async () => {
    // Connections that cannot be reached are accepted; the pipeline keeps retrying its start.
    await create('legacy-src', 'postgres://u@127.0.0.1:1/src');
    await create('legacy-dst', 'postgres://u@127.0.0.1:1/dst');
    // Each into a schema of its own: two pipelines may not write one table.
    const definition = (schema: string) => ({
      source: { connection: 'legacy-src', tables: ['public.t'] },
      sink: { connection: 'legacy-dst', properties: { target_schema: schema } },
    });
    for (const name of ['legacy', 'legacy-stopped']) {
      const created = await service.request('POST', '/v1/pipelines', {
        name,
        ...definition(name.replace('-', '_')),
      });
      expect(created.status).toBe(201);
    }
    expect((await service.request('PUT', '/v1/pipelines/legacy/state', { state: 'start' })).status).toBe(200);
    // As an older version could have stored it.
    await storeQuery(
      "UPDATE connections SET dsn = 'postgres://u@127.0.0.1:1/src?sslmode=verify-full&sslrootcert=/dev/zero' WHERE name = 'legacy-src'",
    );

    const failed = await waitFor(async () => {
      const p = (await service.request('GET', '/v1/pipelines/legacy')).body;
      return p.state === 'failed' ? p : undefined;
    }, 'the running pipeline to fail on its refused DSN');
    expect(failed.error).toContain("'sslrootcert'");
    const start = await service.request('PUT', '/v1/pipelines/legacy-stopped/state', { state: 'start' });
    expect(start).toMatchObject({ status: 422, body: { code: 'INVALID_DSN' } });
    const another = await service.request('POST', '/v1/pipelines', {
      name: 'legacy2',
      ...definition('legacy2'),
    });
    expect(another).toMatchObject({ status: 422, body: { code: 'INVALID_DSN' } });
    expect((await service.request('GET', '/v1/health')).status).toBe(200);
  });
});
