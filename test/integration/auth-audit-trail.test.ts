import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

interface Row {
  action: string;
  target: string | null;
  actor_type: string;
  project_id: string | null;
  outcome: string;
  status: number | null;
  request_id: string | null;
  client_request_id: string | null;
  details: Record<string, any>;
}

/** A request sent with a raw request target (absolute form), which fetch cannot send. */
function rawCall(
  base: string,
  method: string,
  target: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port,
        method,
        path: target,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('the audit trail records every call, in bounded size', () => {
  let service: TestService;
  let storeUrl: string;
  let dataDir: string;
  let admin: ApiCaller;
  let token: string;
  let db: pg.Client;

  const events = async (where: string, params: unknown[] = []): Promise<Row[]> =>
    (await db.query(`SELECT * FROM audit_events WHERE ${where} ORDER BY id`, params)).rows;

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'auth_audit_trail');
    const config = enableAuth(testConfig(storeUrl));
    dataDir = config.dataDir;
    // SSO routes exist only with a public URL; no provider is configured.
    service = await startTestService({
      ...config,
      auth: { ...config.auth, publicUrl: 'http://127.0.0.1:1' },
    });
    db = new pg.Client({ connectionString: storeUrl });
    await db.connect();
    const anonymous = new ApiCaller(service.url);
    expect((await anonymous.call('POST', '/v1/admin/bootstrap', ADMIN)).status).toBe(201);
    admin = new ApiCaller(service.url);
    expect((await admin.login(ADMIN.email, ADMIN.password)).status).toBe(200);
    const made = await admin.call('POST', '/v1/tokens', { name: 'audit-test' });
    expect(made.status).toBe(201);
    token = made.body.token;
  });
  afterAll(async () => {
    await db?.end();
    await service?.stop();
  });

  it('audits a call whose request target is in absolute form, and refuses a foreign authority', async () => {
    const { host } = new URL(service.url);
    const auth = { authorization: `Bearer ${token}` };
    const own = await rawCall(
      service.url,
      'POST',
      `http://${host}/v1/users`,
      {
        email: 'absolute@example.com',
        display_name: 'Absolute Form',
      },
      auth,
    );
    expect(own.status).toBe(201);
    const created = await events("action = 'user.create' AND details->>'email' = 'absolute@example.com'");
    expect(created).toHaveLength(1);
    expect(created[0]?.outcome).toBe('success');

    const foreign = await rawCall(
      service.url,
      'POST',
      'http://elsewhere.example/v1/users',
      {
        email: 'foreign@example.com',
        display_name: 'Foreign Authority',
      },
      auth,
    );
    expect(foreign.status).toBe(400);
    expect(JSON.parse(foreign.text).code).toBe('BAD_REQUEST');
    expect((await admin.call('GET', '/v1/users')).text).not.toContain('foreign@example.com');
    const refused = await events("action = 'user.create' AND status = 400");
    expect(refused).toHaveLength(1);
  });

  it('makes request ids itself: a long caller id is not stored, a short one is kept apart', async () => {
    const anonymous = new ApiCaller(service.url);
    const long = 'x'.repeat(15_000);
    const flooded = await anonymous.call('POST', '/v1/admin/bootstrap', ADMIN, { 'x-request-id': long });
    expect(flooded.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await anonymous.call('POST', '/v1/admin/bootstrap', ADMIN, {
      'x-request-id': 'trace-42.a:b',
    });
    expect(kept.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const rows = await events("action = 'admin.bootstrap'");
    expect(rows.every((row) => (row.request_id ?? '').length <= 64)).toBe(true);
    expect(rows.some((row) => row.client_request_id === 'trace-42.a:b')).toBe(true);
    expect(rows.some((row) => row.request_id === kept.headers.get('x-request-id'))).toBe(true);
    expect(readFileSync(join(dataDir, 'audit.log'), 'utf8')).not.toContain(long.slice(0, 100));
  });

  it('bounds what a flood of anonymous refusals writes', async () => {
    const anonymous = new ApiCaller(service.url);
    for (let i = 0; i < 80; i++) {
      expect((await anonymous.call('DELETE', `/v1/connections/flood${i}`)).status).toBe(401);
    }
    const rows = await events("action = 'connection.delete' AND actor_type = 'anonymous'");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(30);
    const lines = readFileSync(join(dataDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .filter((line) => line.includes('"connection.delete"'));
    expect(lines.length).toBeLessThanOrEqual(30);
  });

  it('records the target and details of a role binding and a user', async () => {
    const user = await admin.call('POST', '/v1/users', { email: 'bob@example.com', display_name: 'Bob' });
    expect(user.status).toBe(201);
    const [userEvent] = await events("action = 'user.create' AND outcome = 'success' AND target = $1", [
      `user:${user.body.id}`,
    ]);
    expect(userEvent?.details).toMatchObject({ email: 'bob@example.com', password: false });
    const binding = await admin.call('POST', '/v1/role-bindings', {
      user_id: user.body.id,
      role: 'admin',
      scope_type: 'organization',
    });
    expect(binding.status).toBe(201);
    const [bindingEvent] = await events("action = 'role_binding.create' AND outcome = 'success'");
    expect(bindingEvent?.target).toBe(`role_binding:${binding.body.id}`);
    expect(bindingEvent?.details).toMatchObject({
      user_id: user.body.id,
      user_email: 'bob@example.com',
      role: 'admin',
      scope_type: 'organization',
    });
  });

  it('records whether an apply was a dry run and what it changed', async () => {
    const document = {
      connections: [{ name: 'audited', type: 'postgres', dsn: 'postgres://user:secret@127.0.0.1:1/db' }],
    };
    const dry = await admin.call('POST', '/v1/apply?dry_run=true', document);
    expect(dry.status).toBe(200);
    const [event] = await events("action = 'apply'");
    expect(event?.details).toMatchObject({
      dry_run: true,
      connections: [{ name: 'audited', result: 'created' }],
    });
    expect(JSON.stringify(event)).not.toContain('secret');
  });

  it('audits a failed SSO start', async () => {
    const anonymous = new ApiCaller(service.url);
    expect((await anonymous.call('GET', '/v1/auth/sso/nobody/login')).status).toBe(404);
    const [event] = await events("action = 'auth.sso_start'");
    expect(event).toMatchObject({ target: 'sso_provider:nobody', outcome: 'failure', status: 404 });
  });

  it("records a login in the session's project", async () => {
    const project = await admin.call('POST', '/v1/projects', { name: 'audited-project' });
    expect(project.status).toBe(201);
    const browser = new ApiCaller(service.url);
    expect((await browser.login(ADMIN.email, ADMIN.password, 'audited-project')).status).toBe(200);
    const rows = await events("action = 'auth.login' AND outcome = 'success'");
    expect(rows.at(-1)?.project_id).toBe(project.body.id);
  });

  it('refuses a NUL in a login e-mail, a token name or an audit filter with 4xx, and keeps the event', async () => {
    const browser = new ApiCaller(service.url);
    const login = await browser.login('nul\u0000@example.com', 'whatever password');
    expect(login.status).toBe(400);
    expect(login.body.code).toBe('BAD_REQUEST');
    const [loginEvent] = await events("action = 'auth.login' AND status = 400");
    expect(loginEvent?.outcome).toBe('failure');

    const named = await admin.call('POST', '/v1/tokens', { name: 'bad\u0000name' });
    expect(named.status).toBe(422);
    expect((await events("action = 'token.create' AND status = 422")).length).toBe(1);

    const filtered = await admin.call('GET', '/v1/audit-events?action=a%00b');
    expect(filtered.status).toBe(400);
    expect(filtered.body.code).toBe('BAD_REQUEST');
  });
});
