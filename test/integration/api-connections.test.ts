import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

describe.each(inject('pgClusters'))('connections API on $label', (cluster) => {
  let service: TestService;
  let storeUrl: string;

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'api_connections');
    service = await startTestService(testConfig(storeUrl));
  });
  afterAll(() => service?.stop());

  const dsn = 'postgres://alice:s3cr%40t@db.example:5432/shop?sslmode=require';

  it('creates a connection and never returns its password', async () => {
    const res = await service.request('POST', '/v1/connections', { name: 'shop', type: 'postgres', dsn });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'shop',
      type: 'postgres',
      dsn: 'postgres://alice:****@db.example:5432/shop?sslmode=require',
      project_id: '00000000-0000-4000-8000-000000000002',
    });
    expect(JSON.stringify(res.body)).not.toContain('s3cr');
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
  });

  it('stores the password sealed, not in clear', async () => {
    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    const { rows } = await client.query("SELECT dsn, password_sealed FROM connections WHERE name = 'shop'");
    await client.end();
    expect(rows[0].dsn).toBe('postgres://alice@db.example:5432/shop?sslmode=require');
    expect(rows[0].password_sealed).toMatch(/^v1\./);
    expect(rows[0].password_sealed).not.toContain('s3cr');
  });

  it('lists and gets connections', async () => {
    const list = await service.request('GET', '/v1/connections');
    expect(list.status).toBe(200);
    expect(list.body.map((c: { name: string }) => c.name)).toContain('shop');
    const one = await service.request('GET', '/v1/connections/shop');
    expect(one.status).toBe(200);
    expect(one.body.dsn).toContain('****');
  });

  it('moves a password given as a query option out of the DSN', async () => {
    const res = await service.request('POST', '/v1/connections', {
      name: 'q',
      type: 'postgres',
      dsn: 'postgresql://bob@h/db?password=pw&sslmode=disable',
    });
    expect(res.status).toBe(201);
    expect(res.body.dsn).toBe('postgresql://bob:****@h/db?sslmode=disable');
  });

  it('replaces a connection, keeping the stored password when **** is sent back for the same endpoint', async () => {
    const res = await service.request('PUT', '/v1/connections/shop', {
      type: 'postgres',
      dsn: 'postgres://alice:****@db.example:5432/shop?sslmode=verify-full',
    });
    expect(res.status).toBe(200);
    expect(res.body.dsn).toBe('postgres://alice:****@db.example:5432/shop?sslmode=verify-full');
    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    const { rows } = await client.query("SELECT password_sealed FROM connections WHERE name = 'shop'");
    await client.end();
    expect(rows[0].password_sealed).toMatch(/^v1\./);
    const noPassword = await service.request('PUT', '/v1/connections/q', {
      type: 'postgres',
      dsn: 'postgres://u@h/db',
    });
    expect(noPassword.body.dsn).toBe('postgres://u@h/db');
  });

  it.each([
    [
      'postgres',
      'postgres://u:pw@db.example:5432/shop?sslmode=verify-full',
      'postgres://u:****@db.example:5432/shop?sslmode=disable',
    ],
    [
      'postgres',
      'postgres://u:pw@db.example:5432/shop?sslmode=verify-full',
      'postgres://u:****@db.example:5432/shop?sslmode=require',
    ],
    [
      'postgres',
      'postgres://u:pw@db.example:5432/shop?sslmode=require',
      'postgres://u:****@db.example:5432/shop',
    ],
    [
      'mysql',
      'mysql://u:pw@db.example:3306/shop?sslmode=verify-full',
      'mysql://u:****@db.example:3306/shop?sslmode=disable',
    ],
    ['redis', 'rediss://u:pw@cache.example:6380/0', 'redis://u:****@cache.example:6380/0'],
    ['rabbitmq', 'amqps://u:pw@mq.example:5671/%2f', 'amqp://u:****@mq.example:5671/%2f'],
    ['nats', 'tls://u:pw@nats.example:4222', 'nats://u:****@nats.example:4222'],
  ])('does not keep a %s password sent as **** when the DSN weakens TLS', async (type, stored, weakened) => {
    const name = `weak-${type}-${Math.random().toString(36).slice(2, 8)}`;
    const created = await service.request('POST', '/v1/connections', { name, type, dsn: stored });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const refused = await service.request('PUT', `/v1/connections/${name}`, { type, dsn: weakened });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.error).toMatch(/the stored password is not kept: give it again/);
    expect((await service.request('GET', `/v1/connections/${name}`)).body.dsn).toBe(created.body.dsn);
    // Given again, the weaker DSN is the caller's choice.
    const given = await service.request('PUT', `/v1/connections/${name}`, {
      type,
      dsn: weakened.replace('****', 'pw2'),
    });
    expect(given.status, JSON.stringify(given.body)).toBe(200);
    // Sent back masked for the same DSN, it is kept.
    const kept = await service.request('PUT', `/v1/connections/${name}`, { type, dsn: weakened });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
  });

  it.each([
    [{ name: 'x', type: 'postgres' }, 400, 'BAD_REQUEST', 'dsn: is required'],
    [{ name: 'x', type: 'postgres', dsn: 5 }, 400, 'BAD_REQUEST', 'dsn'],
    [{ name: 'x', type: 'postgres', dsn: 'x', extra: 1 }, 400, 'BAD_REQUEST', 'extra: is not a known field'],
    [{ name: 'bad name!', type: 'postgres', dsn }, 422, 'VALIDATION_FAILED', 'name: must be'],
    [{ name: 'a'.repeat(64), type: 'postgres', dsn }, 422, 'VALIDATION_FAILED', 'name'],
    [{ name: 'x', type: 'oracle', dsn }, 422, 'VALIDATION_FAILED', 'type: must be one of postgres'],
    [{ name: 'x', type: 'postgres', dsn: 'not a url' }, 422, 'INVALID_DSN', 'dsn: must be a URL'],
    [{ name: 'x', type: 'postgres', dsn: 'mysql://h/db' }, 422, 'INVALID_DSN', 'dsn: scheme'],
    [{ name: 'x', type: 'postgres', dsn: 'postgres://u@h:5432' }, 422, 'INVALID_DSN', 'database'],
    [
      { name: 'x', type: 'postgres', dsn: 'postgres://u:****@h/db' },
      422,
      'INVALID_DSN',
      'only accepted on update',
    ],
  ])('refuses %j with %i %s', async (body, status, code, message) => {
    const res = await service.request('POST', '/v1/connections', body);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(code);
    expect(res.body.error).toContain(message);
  });

  it('refuses malformed JSON and a wrong content type', async () => {
    const bad = await service.request('POST', '/v1/connections', '{"name":');
    expect(bad).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const res = await fetch(`${service.url}/v1/connections`, { method: 'POST', body: 'name=x' });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('refuses a duplicate name with 409 ALREADY_EXISTS', async () => {
    const res = await service.request('POST', '/v1/connections', { name: 'shop', type: 'postgres', dsn });
    expect(res).toMatchObject({ status: 409, body: { code: 'ALREADY_EXISTS' } });
  });

  it('refuses renaming through PUT', async () => {
    const res = await service.request('PUT', '/v1/connections/shop', {
      name: 'other',
      type: 'postgres',
      dsn,
    });
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
  });

  it('answers 404 NOT_FOUND for a missing connection', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await service.request(method, '/v1/connections/missing');
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    }
    const put = await service.request('PUT', '/v1/connections/missing', { type: 'postgres', dsn });
    expect(put).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });

  it('refuses to delete a connection a pipeline uses, unless forced', async () => {
    await service.request('POST', '/v1/connections', { name: 'sink', type: 'postgres', dsn });
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'uses-shop',
      source: { connection: 'shop', tables: ['public.orders'] },
      sink: { connection: 'sink' },
    });
    expect(created.status).toBe(201);
    const refused = await service.request('DELETE', '/v1/connections/shop');
    expect(refused).toMatchObject({ status: 409, body: { code: 'CONNECTION_IN_USE' } });
    expect(refused.body.error).toContain("'uses-shop'");
    expect((await service.request('GET', '/v1/connections/shop')).status).toBe(200);

    const forced = await fetch(`${service.url}/v1/connections/shop?force=true`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(forced.status).toBe(204);
    expect(await forced.text()).toBe('');
    expect((await service.request('GET', '/v1/connections/shop')).status).toBe(404);
    // The pipeline is kept, naming the missing connection, until it is given another one.
    expect((await service.request('GET', '/v1/pipelines/uses-shop')).body.source.connection).toBe('shop');
  });

  it('refuses an unknown value of force with 400', async () => {
    const res = await service.request('DELETE', '/v1/connections/q?force=yes');
    expect(res).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    expect(res.body.error).toBe('force: must be one of true, false');
    expect((await service.request('GET', '/v1/connections/q')).status).toBe(200);
  });

  it('deletes an unused connection with 204', async () => {
    const res = await fetch(`${service.url}/v1/connections/q`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
  });
});
