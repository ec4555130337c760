import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Config } from '../../src/config/options.js';
import { ADMIN, type Answer, ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  DEFAULT_PROJECT_ID,
  FIXTURE_PASSWORD,
  type FixtureUser,
  organizationScope,
  pipelineBody,
  projectScope,
  signIn,
  unreachableConnection,
} from '../support/auth-fixtures.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

const UNAUTHENTICATED = '{"error":"unauthenticated"}';
const SOME_UUID = '7d9f1c2e-3b4a-4c5d-8e6f-0123456789ab';

/**
 * Calls that every mode answers, one per kind of route: reads, changes, operations, organization
 * endpoints, sessions, tokens and /metrics. Routes whose OpenAPI answer lists a 401 are included.
 */
const API_CALLS: [string, string, unknown?][] = [
  ['GET', '/v1/pipelines'],
  ['GET', '/v1/pipelines/orders'],
  ['GET', '/v1/connections'],
  ['POST', '/v1/connections', unreachableConnection('anonymous')],
  ['PUT', '/v1/connections/dst', { type: 'postgres', dsn: 'postgres://u:p@127.0.0.1:1/dst' }],
  ['DELETE', '/v1/connections/no-such-connection'],
  ['POST', '/v1/pipelines', pipelineBody('anonymous')],
  ['PUT', '/v1/pipelines/orders/state', { state: 'pause' }],
  ['GET', '/v1/health'],
  ['GET', '/v1/workers'],
  ['GET', '/v1/users'],
  ['GET', '/v1/projects'],
  ['GET', '/v1/auth/session'],
  ['PUT', '/v1/auth/session', { project: 'default' }],
  ['GET', '/v1/tokens'],
  ['POST', '/v1/tokens', { name: 'anonymous' }],
  ['DELETE', `/v1/tokens/${SOME_UUID}`],
  ['GET', '/metrics'],
];

function expectCode(res: Answer, status: number, code: string, what: string) {
  expect(res.status, `${what}: ${res.text}`).toBe(status);
  expect(res.body, what).toMatchObject({ code, error: expect.any(String) });
}

const names = (res: Answer) => (res.body as { name: string }[]).map((r) => r.name).sort();

interface AuditRow {
  actor_type: string;
  actor_id: string | null;
  actor_name: string;
  action: string;
  target: string | null;
  outcome: string;
}

/**
 * The capability table of the specification, row by row, in each mode, on one store that is
 * switched from `none` to `enabled` and back (the spec's rules 7 and 8): the first run generates
 * the master key in the data directory, the later runs are pointed at it.
 */
describe('authentication modes: the capability table, switching none → enabled → none', () => {
  let storeUrl: string;
  let dataDir: string;
  let noneConfig: Config;
  let enabledConfig: Config;
  let fixtures: AuthFixtures;
  let adminId: string;
  let auditCountWhileEnabled = 0;

  const auditRows = async (): Promise<AuditRow[]> =>
    (
      await fixtures.query<AuditRow>(
        'SELECT actor_type, actor_id, actor_name, action, target, outcome FROM audit_events ORDER BY id',
      )
    ).rows;
  const auditFileLines = () =>
    readFileSync(join(dataDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'auth_capabilities');
    dataDir = mkdtempSync(join(tmpdir(), 'replicator-auth-modes-'));
    noneConfig = testConfig(storeUrl, dataDir);
    enabledConfig = {
      ...noneConfig,
      auth: { ...noneConfig.auth, mode: 'enabled', masterKeyFile: join(dataDir, 'master.key') },
    };
  });
  afterAll(() => fixtures?.close());

  describe('in mode none (first start)', () => {
    let service: TestService;
    let anonymous: ApiCaller;

    beforeAll(async () => {
      service = await startTestService(noneConfig);
      fixtures = await AuthFixtures.open(storeUrl);
      anonymous = new ApiCaller(service.url);
    });
    afterAll(() => service?.stop());

    it('generated the master key in the data directory, readable by its owner only', () => {
      const keyFile = join(dataDir, 'master.key');
      expect(existsSync(keyFile)).toBe(true);
      expect(readFileSync(keyFile, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
      expect(statSync(keyFile).mode & 0o077).toBe(0);
    });

    it('anonymous API access: allowed', async () => {
      for (const name of ['src', 'dst']) {
        const created = await anonymous.call('POST', '/v1/connections', unreachableConnection(name));
        expect(created.status, created.text).toBe(201);
      }
      const pipeline = await anonymous.call('POST', '/v1/pipelines', pipelineBody('orders'));
      expect(pipeline.status, pipeline.text).toBe(201);
      for (const path of ['/v1/pipelines', '/v1/connections', '/v1/health', '/v1/workers', '/metrics']) {
        expect((await anonymous.call('GET', path)).status, path).toBe(200);
      }
    });

    it('bootstrap: creates the first admin while authentication is off', async () => {
      const res = await anonymous.call('POST', '/v1/admin/bootstrap', ADMIN);
      expect(res.status, res.text).toBe(201);
      expect(res.body.user).toMatchObject({ email: ADMIN.email, disabled: false });
      expect(res.body.role_binding).toMatchObject({ role: 'admin', scope_type: 'organization' });
      adminId = res.body.user.id;
    });

    it('login and user accounts: not used (409 AUTH_DISABLED, no cookie)', async () => {
      const login = await anonymous.login(ADMIN.email, ADMIN.password);
      expectCode(login, 409, 'AUTH_DISABLED', 'login');
      expect(login.headers.getSetCookie()).toEqual([]);
      expectCode(await anonymous.call('POST', '/v1/auth/logout'), 409, 'AUTH_DISABLED', 'logout');
      expectCode(await anonymous.call('GET', '/v1/auth/session'), 409, 'AUTH_DISABLED', 'who am I');
      expectCode(
        await anonymous.call('PUT', '/v1/auth/session', { project: 'default' }),
        409,
        'AUTH_DISABLED',
        'switch project',
      );
    });

    it('role checks on mutating operations: bypassed, whatever the request presents', async () => {
      const forged = ApiCaller.withToken(service.url, 'rpl_tok_nothingthatexists');
      for (const [method, path, body] of API_CALLS) {
        const res = await forged.call(method, path, body);
        expect([401, 403], `${method} ${path}: ${res.text}`).not.toContain(res.status);
      }
      expect((await anonymous.call('PUT', '/v1/pipelines/orders/state', { state: 'pause' })).status).toBe(
        409,
      );
      const users = await anonymous.call('GET', '/v1/users');
      expect(users.status).toBe(200);
      expect(users.body.map((u: { email: string }) => u.email)).toContain(ADMIN.email);
    });

    it("list filtering by project: disabled (lists are the default project's records)", async () => {
      expect(names(await anonymous.call('GET', '/v1/pipelines'))).toEqual(['anonymous', 'orders']);
      expect(names(await anonymous.call('GET', '/v1/connections'))).toEqual(['anonymous', 'dst', 'src']);
      expect((await anonymous.call('GET', '/v1/pipelines/orders')).body.project_id).toBe(DEFAULT_PROJECT_ID);
    });

    it('audit actor: always system, in the audit_events table and in the audit.log file', async () => {
      const rows = await auditRows();
      expect(rows.map((r) => r.action)).toEqual(
        expect.arrayContaining(['connection.create', 'pipeline.create', 'admin.bootstrap', 'pipeline.state']),
      );
      for (const row of rows) {
        expect(row, row.action).toMatchObject({ actor_type: 'system', actor_id: null, actor_name: 'system' });
      }
      const lines = auditFileLines();
      expect(lines).toHaveLength(rows.length);
      for (const line of lines) expect(line.actor).toEqual({ type: 'system', id: null, name: 'system' });
    });

    it('API tokens: n/a (409 AUTH_DISABLED)', async () => {
      expectCode(await anonymous.call('POST', '/v1/tokens', { name: 'ci' }), 409, 'AUTH_DISABLED', 'create');
      expectCode(await anonymous.call('GET', '/v1/tokens'), 409, 'AUTH_DISABLED', 'list');
      expectCode(await anonymous.call('DELETE', `/v1/tokens/${SOME_UUID}`), 409, 'AUTH_DISABLED', 'revoke');
    });

    it('SSO: n/a (its routes do not exist; sso-oidc and sso-saml tests cover mode enabled)', async () => {
      expectCode(await anonymous.call('GET', '/v1/auth/sso/providers'), 404, 'NOT_FOUND', 'providers');
      expectCode(await anonymous.call('GET', '/v1/auth/sso/okta/login'), 404, 'NOT_FOUND', 'login');
      expectCode(await anonymous.call('GET', '/v1/sso/providers'), 404, 'NOT_FOUND', 'management');
    });
  });

  describe('in mode enabled (the same store, data directory and master key)', () => {
    let service: TestService;
    let admin: ApiCaller;
    let viewer: FixtureUser;

    beforeAll(async () => {
      service = await startTestService(enabledConfig);
      await fixtures.project('other');
      viewer = await fixtures.userWith('viewer@example.com', 'viewer', projectScope(DEFAULT_PROJECT_ID));
    });
    afterAll(async () => {
      auditCountWhileEnabled = (await auditRows()).length;
      await service?.stop();
    });

    it('anonymous API access: refused with 401 and exactly {"error":"unauthenticated"}', async () => {
      const anonymous = new ApiCaller(service.url);
      for (const [method, path, body] of API_CALLS) {
        const res = await anonymous.call(method, path, body);
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(401);
        expect(res.text, `${method} ${path}`).toBe(UNAUTHENTICATED);
      }
    });

    it('login and user accounts: required; the admin bootstrapped in mode none signs in', async () => {
      admin = new ApiCaller(service.url);
      const res = await admin.login(ADMIN.email, ADMIN.password);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({
        user: { id: adminId, email: ADMIN.email },
        via: 'session',
        project: { id: DEFAULT_PROJECT_ID },
        role: 'admin',
        organization_admin: true,
      });
      expect(admin.cookie).toMatch(/^service_session=rpl_ses_/);
      const again = await new ApiCaller(service.url).call('POST', '/v1/admin/bootstrap', {
        ...ADMIN,
        email: 'second@example.com',
      });
      expectCode(again, 409, 'ADMIN_EXISTS', 'a second bootstrap');
    });

    it('keeps the records made in mode none, their secrets still readable with the same master key', async () => {
      expect(names(await admin.call('GET', '/v1/connections'))).toEqual(['anonymous', 'dst', 'src']);
      expect(names(await admin.call('GET', '/v1/pipelines'))).toEqual(['anonymous', 'orders']);
      // Checking a new definition opens the sealed passwords of its connections.
      const created = await admin.call('POST', '/v1/pipelines', pipelineBody('after-switch'));
      expect(created.status, created.text).toBe(201);
    });

    it('role checks on mutating operations: enforced', async () => {
      const browser = await signIn(service.url, viewer);
      expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
      for (const [method, path, body] of [
        ['POST', '/v1/connections', unreachableConnection('by-viewer')],
        ['POST', '/v1/pipelines', pipelineBody('by-viewer')],
        ['PUT', '/v1/pipelines/orders/state', { state: 'pause' }],
        ['DELETE', '/v1/pipelines/orders'],
        ['GET', '/v1/users'],
      ] as const) {
        expectCode(await browser.call(method, path, body), 403, 'FORBIDDEN', `viewer: ${method} ${path}`);
      }
      expect((await admin.call('POST', '/v1/connections', unreachableConnection('by-admin'))).status).toBe(
        201,
      );
    });

    it('list filtering by project: only the active project’s records', async () => {
      expect((await admin.call('PUT', '/v1/auth/session', { project: 'other' })).status).toBe(200);
      expect(await admin.call('GET', '/v1/connections')).toMatchObject({ status: 200, body: [] });
      expect(await admin.call('GET', '/v1/pipelines')).toMatchObject({ status: 200, body: [] });
      expect((await admin.call('POST', '/v1/connections', unreachableConnection('in-other'))).status).toBe(
        201,
      );
      expect(names(await admin.call('GET', '/v1/connections'))).toEqual(['in-other']);
      expect((await admin.call('PUT', '/v1/auth/session', { project: 'default' })).status).toBe(200);
      expect(names(await admin.call('GET', '/v1/connections'))).toEqual([
        'anonymous',
        'by-admin',
        'dst',
        'src',
      ]);
    });

    it('audit actor: the real user, or `<email> token <name>` for a token', async () => {
      expect((await admin.call('POST', '/v1/connections', unreachableConnection('by-session'))).status).toBe(
        201,
      );
      const made = await admin.call('POST', '/v1/tokens', { name: 'robot', lifetime_hours: 1 });
      const robot = ApiCaller.withToken(service.url, made.body.token);
      expect((await robot.call('POST', '/v1/connections', unreachableConnection('by-token'))).status).toBe(
        201,
      );

      const rows = await auditRows();
      const byTarget = (target: string) => rows.find((r) => r.target === target && r.outcome === 'success');
      expect(byTarget('connection:by-session')).toMatchObject({
        actor_type: 'user',
        actor_id: adminId,
        actor_name: ADMIN.email,
      });
      expect(byTarget('connection:by-token')).toMatchObject({
        actor_type: 'token',
        actor_id: adminId,
        actor_name: `${ADMIN.email} token robot`,
      });
      // Refused before its body was read: the attempt is recorded without a target.
      expect(
        rows.find((r) => r.actor_name === 'viewer@example.com' && r.action === 'connection.create'),
      ).toMatchObject({
        actor_type: 'user',
        outcome: 'denied',
      });
      const lines = auditFileLines();
      expect(lines.find((l) => l.target === 'connection:by-token')?.actor).toEqual({
        type: 'token',
        id: adminId,
        name: `${ADMIN.email} token robot`,
      });
      expect(lines.find((l) => l.target === 'connection:by-session')?.actor).toEqual({
        type: 'user',
        id: adminId,
        name: ADMIN.email,
      });
    });

    it('API tokens: accepted', async () => {
      const made = await admin.call('POST', '/v1/tokens', { name: 'ci', lifetime_hours: 1 });
      expect(made.status, made.text).toBe(201);
      const ci = ApiCaller.withToken(service.url, made.body.token);
      expect(names(await ci.call('GET', '/v1/pipelines'))).toEqual(['after-switch', 'anonymous', 'orders']);
      expect((await ci.call('GET', '/v1/auth/session')).body).toMatchObject({ via: 'token', role: 'admin' });
    });
  });

  describe('in mode none again (switching back loses nothing)', () => {
    let service: TestService;
    let anonymous: ApiCaller;

    beforeAll(async () => {
      service = await startTestService(noneConfig);
      anonymous = new ApiCaller(service.url);
    });
    afterAll(() => service?.stop());

    it("keeps every record; lists hold every project's, as project filtering is off", async () => {
      const defaults = ['anonymous', 'by-admin', 'by-session', 'by-token', 'dst', 'src'];
      expect(names(await anonymous.call('GET', '/v1/connections'))).toEqual([...defaults, 'in-other'].sort());
      const narrowed = await anonymous.call('GET', '/v1/connections', undefined, {
        'replicator-project': 'default',
      });
      expect(names(narrowed)).toEqual(defaults);
      expect(names(await anonymous.call('GET', '/v1/pipelines'))).toEqual([
        'after-switch',
        'anonymous',
        'orders',
      ]);
      const other = await fixtures.query(
        "SELECT c.name FROM connections c JOIN projects p ON p.id = c.project_id WHERE p.name = 'other'",
      );
      expect(other.rows).toEqual([{ name: 'in-other' }]);
    });

    it('keeps users, role bindings, projects, tokens and the audit trail', async () => {
      const users = await fixtures.query('SELECT email, disabled FROM users ORDER BY email');
      expect(users.rows).toEqual([
        { email: ADMIN.email, disabled: false },
        { email: 'viewer@example.com', disabled: false },
      ]);
      const bindings = await fixtures.query(
        'SELECT u.email, b.role, b.scope_type FROM role_bindings b JOIN users u ON u.id = b.user_id ORDER BY u.email',
      );
      expect(bindings.rows).toEqual([
        { email: ADMIN.email, role: 'admin', scope_type: 'organization' },
        { email: 'viewer@example.com', role: 'viewer', scope_type: 'project' },
      ]);
      expect((await fixtures.query("SELECT 1 FROM projects WHERE name = 'other'")).rowCount).toBe(1);
      expect((await fixtures.query('SELECT name FROM api_tokens ORDER BY name')).rows).toEqual([
        { name: 'ci' },
        { name: 'robot' },
      ]);
      const rows = await auditRows();
      expect(rows.length).toBeGreaterThanOrEqual(auditCountWhileEnabled);
      expect(new Set(rows.map((r) => r.actor_type))).toEqual(
        new Set(['system', 'user', 'token', 'anonymous']),
      );
      const listed = await anonymous.call('GET', '/v1/users');
      expect(listed.body.map((u: { email: string }) => u.email).sort()).toEqual([
        ADMIN.email,
        'viewer@example.com',
      ]);
    });

    it('audit actor: system again, appended to the same trail', async () => {
      const before = (await auditRows()).length;
      expect(
        (await anonymous.call('POST', '/v1/connections', unreachableConnection('back-off'))).status,
      ).toBe(201);
      const rows = await auditRows();
      expect(rows).toHaveLength(before + 1);
      expect(rows.at(-1)).toMatchObject({
        actor_type: 'system',
        actor_name: 'system',
        target: 'connection:back-off',
      });
      expect(auditFileLines().at(-1)).toMatchObject({ actor: { type: 'system', name: 'system' } });
    });

    it('login and API tokens: 409 AUTH_DISABLED again', async () => {
      expectCode(await anonymous.login(ADMIN.email, ADMIN.password), 409, 'AUTH_DISABLED', 'login');
      expectCode(await anonymous.call('GET', '/v1/tokens'), 409, 'AUTH_DISABLED', 'tokens');
    });
  });
});

/**
 * Spec, Authentication, rule 7: "If no admin exists when enabled, every call is refused with 401."
 * A user with a project role but no organization admin in the store.
 */
describe('authentication enabled without an admin', () => {
  let service: TestService;
  let fixtures: AuthFixtures;
  let early: FixtureUser;

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'auth_capabilities_no_admin');
    service = await startTestService(enableAuth(testConfig(storeUrl)));
    fixtures = await AuthFixtures.open(storeUrl);
    early = await fixtures.userWith('early@example.com', 'editor', projectScope(DEFAULT_PROJECT_ID));
  });
  afterAll(async () => {
    await fixtures?.close();
    await service?.stop();
  });

  it('refuses a sign-in with 401 while no admin exists', async () => {
    const browser = new ApiCaller(service.url);
    const res = await browser.login(early.email, FIXTURE_PASSWORD);
    expect(res.status, res.text).toBe(401);
    expect(browser.cookie).toBeUndefined();
  });

  it('refuses every call with 401 once the last admin is disabled', async () => {
    const admin = await fixtures.userWith('only-admin@example.com', 'admin', organizationScope);
    const browser = await signIn(service.url, early);
    expect((await browser.call('GET', '/v1/pipelines')).status).toBe(200);
    await fixtures.query('UPDATE users SET disabled = true WHERE id = $1', [admin.id]);
    const res = await browser.call('GET', '/v1/pipelines');
    expect(res.status).toBe(401);
    expect(res.text).toBe(UNAUTHENTICATED);
  });

  it('still lets the first admin be bootstrapped', async () => {
    const res = await new ApiCaller(service.url).call('POST', '/v1/admin/bootstrap', ADMIN);
    expect(res.status, res.text).toBe(201);
    expect((await new ApiCaller(service.url).login(ADMIN.email, ADMIN.password)).status).toBe(200);
  });
});
