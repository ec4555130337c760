import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

describe('authentication enabled: bootstrap, sessions, tokens', () => {
  let service: TestService;
  let storeUrl: string;
  let dataDir: string;

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'auth_core');
    const config = enableAuth(testConfig(storeUrl));
    dataDir = config.dataDir;
    service = await startTestService(config);
  });
  afterAll(() => service?.stop());

  it('refuses every anonymous call with exactly {"error":"unauthenticated"}', async () => {
    const anonymous = new ApiCaller(service.url);
    for (const [method, path] of [
      ['GET', '/v1/pipelines'],
      ['GET', '/v1/connections'],
      ['POST', '/v1/connections'],
      ['GET', '/v1/health'],
      ['GET', '/v1/workers'],
      ['GET', '/v1/nothing-here'],
      ['GET', '/metrics'],
    ] as const) {
      const res = await anonymous.call(method, path, method === 'POST' ? {} : undefined);
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.text).toBe('{"error":"unauthenticated"}');
    }
  });

  it('bootstraps the first admin once; a weak password is refused with the reason', async () => {
    const anonymous = new ApiCaller(service.url);
    const weak = await anonymous.call('POST', '/v1/admin/bootstrap', { ...ADMIN, password: 'password1234' });
    expect(weak.status).toBe(422);
    expect(weak.body.error).toMatch(/password: is too easy to guess/);
    const short = await anonymous.call('POST', '/v1/admin/bootstrap', { ...ADMIN, password: 'short' });
    expect(short.body.error).toMatch(/at least 12 characters/);
    const created = await anonymous.call('POST', '/v1/admin/bootstrap', ADMIN);
    expect(created.status).toBe(201);
    expect(created.body.user).toMatchObject({ email: ADMIN.email, display_name: ADMIN.display_name });
    expect(created.text).not.toContain('argon2');
    const again = await anonymous.call('POST', '/v1/admin/bootstrap', { ...ADMIN, email: 'eve@example.com' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ADMIN_EXISTS');
  });

  it('stores the password with argon2id at OWASP parameters', async () => {
    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    const { rows } = await client.query('SELECT password_hash FROM users');
    await client.end();
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$v=19\$m=47104,t=1,p=1\$/);
  });

  it('signs in with a session cookie: HttpOnly, SameSite=Lax, Path=/, a new id at every login', async () => {
    const browser = new ApiCaller(service.url);
    const wrong = await browser.login(ADMIN.email, 'not the password at all');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('INVALID_CREDENTIALS');
    const res = await browser.login(ADMIN.email, ADMIN.password);
    expect(res.status).toBe(200);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('service_session=')) as string;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/);
    expect(res.body).toMatchObject({ via: 'session', role: 'admin', organization_admin: true });
    const first = browser.cookie;
    expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);

    // A second login from the same browser: a new id, and the old one no longer works.
    await browser.login(ADMIN.email, ADMIN.password);
    expect(browser.cookie).not.toBe(first);
    const stale = new ApiCaller(service.url);
    stale.cookie = first;
    expect((await stale.call('GET', '/v1/pipelines')).status).toBe(401);

    const out = await browser.call('POST', '/v1/auth/logout');
    expect(out.status).toBe(204);
    expect((await browser.call('GET', '/v1/pipelines')).status).toBe(401);
  });

  it('refuses a state-changing session call from another origin (CSRF)', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const forged = await browser.call(
      'POST',
      '/v1/connections',
      { name: 'c1', type: 'postgres', dsn: 'postgres://u:p@db.example/x' },
      { origin: 'https://evil.example' },
    );
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe('FORBIDDEN');
    browser.origin = undefined;
    const bare = await browser.call('POST', '/v1/connections', {
      name: 'c1',
      type: 'postgres',
      dsn: 'postgres://u:p@db.example/x',
    });
    expect(bare.status).toBe(403);
    browser.origin = service.url;
    const same = await browser.call('POST', '/v1/connections', {
      name: 'c1',
      type: 'postgres',
      dsn: 'postgres://u:p@db.example/x',
    });
    expect(same.status).toBe(201);
  });

  it('opens the live feed to a signed-in page of its own origin only (no cross-site WebSocket hijacking)', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const wsUrl = `${service.url.replace('http', 'ws')}/v1/live`;
    const open = (headers: Record<string, string>) =>
      new Promise<{ status?: number; message?: string }>((resolve) => {
        const socket = new WebSocket(wsUrl, { headers });
        socket.on('message', (data) => {
          resolve({ message: String(data) });
          socket.close();
        });
        socket.on('unexpected-response', (req, res) => {
          resolve({ status: res.statusCode });
          req.destroy();
        });
        socket.on('error', () => {});
      });
    const cookie = browser.cookie as string;
    expect(await open({ cookie, origin: 'https://evil.example' })).toEqual({ status: 403 });
    expect(await open({})).toEqual({ status: 401 });
    const own = await open({ cookie, origin: service.url });
    expect(JSON.parse(own.message as string)).toMatchObject({ type: 'hello' });
  });

  it('makes a token shown once, accepts it as Bearer, lists it without the secret, and revokes it', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const made = await browser.call('POST', '/v1/tokens', { name: 'ci', lifetime_hours: 2 });
    expect(made.status).toBe(201);
    expect(made.body.token).toMatch(/^rpl_tok_[a-z2-7]{32}$/);
    const hours = (Date.parse(made.body.expires_at) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(1.9);
    expect(hours).toBeLessThanOrEqual(2);

    const ci = ApiCaller.withToken(service.url, made.body.token);
    expect((await ci.call('GET', '/v1/connections')).status).toBe(200);
    const me = await ci.call('GET', '/v1/auth/session');
    expect(me.body).toMatchObject({ via: 'token', role: 'admin' });
    // A token does not make tokens: a stolen one cannot be used to persist.
    expect((await ci.call('POST', '/v1/tokens', { name: 'more' })).status).toBe(403);

    const listed = await browser.call('GET', '/v1/tokens');
    expect(listed.body.map((t: { name: string }) => t.name)).toContain('ci');
    expect(listed.text).not.toContain(made.body.token);

    expect((await browser.call('DELETE', `/v1/tokens/${made.body.id}`)).status).toBe(204);
    const revoked = await ci.call('GET', '/v1/connections');
    expect(revoked.status).toBe(401);
    expect(revoked.text).toBe('{"error":"unauthenticated"}');
  });

  it('refuses an expired token with 401', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const made = await browser.call('POST', '/v1/tokens', { name: 'short-lived', lifetime_hours: 1 });
    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    await client.query("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1", [
      made.body.id,
    ]);
    await client.end();
    expect(
      (await ApiCaller.withToken(service.url, made.body.token).call('GET', '/v1/pipelines')).status,
    ).toBe(401);
  });

  it('writes every mutating call and every login to the audit file as JSON lines', async () => {
    const lines = readFileSync(join(dataDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const actions = lines.map((l) => `${l.action} ${l.outcome}`);
    expect(actions).toContain('admin.bootstrap success');
    expect(actions).toContain('auth.login denied');
    expect(actions).toContain('auth.login success');
    expect(actions).toContain('token.create success');
    expect(actions).toContain('token.revoke success');
    expect(actions).toContain('connection.create denied');
    expect(actions).toContain('connection.create success');
    const created = lines.find((l) => l.action === 'connection.create' && l.outcome === 'success');
    expect(created).toMatchObject({
      actor: { type: 'user', name: ADMIN.email },
      target: 'connection:c1',
      source_address: '127.0.0.1',
      status: 201,
    });
    expect(JSON.stringify(lines)).not.toContain(ADMIN.password);
  });

  it('shows the trail to an organization admin, paged, and the store refuses to change or delete it', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const logins = await browser.call('GET', '/v1/audit-events?action=auth.login&outcome=success&limit=2');
    expect(logins.status).toBe(200);
    expect(logins.body.events).toHaveLength(2);
    expect(logins.body.events[0]).toMatchObject({
      action: 'auth.login',
      outcome: 'success',
      actor: { type: 'user' },
    });
    expect(logins.body.events[0].id).toBeGreaterThan(logins.body.events[1].id);
    const next = await browser.call(
      'GET',
      `/v1/audit-events?action=auth.login&outcome=success&limit=2&cursor=${logins.body.next_cursor}`,
    );
    expect(next.body.events[0].id).toBeLessThan(logins.body.events[1].id);
    for (const query of ['limit=0', 'limit=501', 'cursor=garbage', 'outcome=maybe', 'actor_id=bob']) {
      const refused = await browser.call('GET', `/v1/audit-events?${query}`);
      expect(refused, query).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    }

    const client = new pg.Client({ connectionString: storeUrl });
    await client.connect();
    try {
      await expect(client.query("UPDATE audit_events SET actor_name = 'someone else'")).rejects.toThrow(
        'append-only',
      );
      await expect(client.query('DELETE FROM audit_events')).rejects.toThrow('append-only');
      await expect(client.query('TRUNCATE audit_events')).rejects.toThrow('append-only');
    } finally {
      await client.end();
    }
  });

  it("lists the caller's sessions without secrets and ends one from another browser", async () => {
    const laptop = new ApiCaller(service.url);
    const phone = new ApiCaller(service.url);
    await laptop.login(ADMIN.email, ADMIN.password);
    await phone.login(ADMIN.email, ADMIN.password);
    const listed = await laptop.call('GET', '/v1/auth/sessions');
    expect(listed.status).toBe(200);
    const current = listed.body.filter((row: { current: boolean }) => row.current);
    expect(current).toHaveLength(1);
    expect(listed.text).not.toContain((laptop.cookie as string).split('=')[1]);
    const other = listed.body.find((row: { current: boolean }) => !row.current);
    expect((await laptop.call('DELETE', `/v1/auth/sessions/${other.id}`)).status).toBe(204);
    // Whichever session that was, exactly one of the two browsers is now signed out.
    const answers = [
      (await laptop.call('GET', '/v1/auth/session')).status,
      (await phone.call('GET', '/v1/auth/session')).status,
    ].sort();
    expect(answers).toEqual([200, 401]);
    expect((await laptop.call('DELETE', '/v1/auth/sessions/not-a-uuid')).status).toBeOneOf([401, 404]);
  });

  it('shows the organization to a signed-in caller', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const organization = await browser.call('GET', '/v1/organization');
    expect(organization.body).toMatchObject({ id: '00000000-0000-4000-8000-000000000001', name: 'default' });
  });

  it('describes the endpoints and their security in the OpenAPI document', async () => {
    const browser = new ApiCaller(service.url);
    await browser.login(ADMIN.email, ADMIN.password);
    const doc = (await browser.call('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['bearerToken', 'sessionCookie']);
    expect(doc.security).toEqual([{ bearerToken: [] }, { sessionCookie: [] }]);
    for (const path of [
      '/v1/admin/bootstrap',
      '/v1/auth/login',
      '/v1/auth/logout',
      '/v1/auth/session',
      '/v1/auth/sessions',
      '/v1/auth/sessions/{id}',
      '/v1/tokens',
      '/v1/tokens/{id}',
      '/v1/audit-events',
      '/v1/organization',
      '/v1/users',
      '/v1/workspaces',
      '/v1/projects',
      '/v1/role-bindings',
      '/v1/roles',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    // Public routes need no credentials; the others inherit the document's.
    expect(doc.paths['/v1/admin/bootstrap'].post.security).toEqual([]);
    expect(doc.paths['/v1/auth/login'].post.security).toEqual([]);
    expect(doc.paths['/v1/tokens'].post.security).toBeUndefined();
  });

  it('rate-limits sign-in attempts with 429 and Retry-After', async () => {
    // A second instance on the same store, at the default limit of 10 a minute.
    const limited = await startTestService({
      ...enableAuth(testConfig(storeUrl)),
      auth: {
        ...enableAuth(testConfig(storeUrl)).auth,
        masterKeyFile: join(dataDir, 'master.key'),
        loginAttemptsPerMinute: 10,
      },
    });
    try {
      const browser = new ApiCaller(limited.url);
      const answers = [];
      for (let i = 0; i < 11; i++)
        answers.push(await browser.login('nobody@example.com', `wrong password number ${i}`));
      expect(answers.slice(0, 10).map((a) => a.status)).toEqual(Array(10).fill(401));
      const last = answers[10] as (typeof answers)[number];
      expect(last.status).toBe(429);
      expect(last.body.code).toBe('RATE_LIMITED');
      expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });
});
