import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Answer, ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  DEFAULT_PROJECT_ID,
  type FixtureUser,
  organizationScope,
  pipelineBody,
  projectScope,
  signIn,
  unreachableConnection,
  workspaceScope,
} from '../support/auth-fixtures.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

/** The callers of the matrix: a user per role bound on the default project, and an organization admin. */
const CALLERS = ['viewer', 'operator', 'editor', 'admin', 'org-admin'] as const;
type Caller = (typeof CALLERS)[number];

/** What a route declares (`config.permission`), and who gets past it. */
type Need = 'read' | 'operate' | 'edit' | 'organization';
const ALLOWED: Record<Need, readonly Caller[]> = {
  read: ['viewer', 'operator', 'editor', 'admin', 'org-admin'],
  operate: ['operator', 'editor', 'admin', 'org-admin'],
  edit: ['editor', 'admin', 'org-admin'],
  organization: ['org-admin'],
};

/**
 * A request of the matrix. `:who` in the route stands for the caller, so that each caller acts on
 * records of its own where it matters (a create, a delete).
 */
interface Row {
  route: string;
  need: Need;
  /** The status an allowed caller gets: the call got past the guard and did what it could. */
  allowedStatus: number;
  body?: (who: Caller) => unknown;
  /** The path, when the route's own (with `:who` filled in) will not do. */
  path?: (who: Caller) => string;
}

const row = (route: string, need: Need, allowedStatus: number, more: Partial<Row> = {}): Row => ({
  route,
  need,
  allowedStatus,
  ...more,
});

const ROWS: Row[] = [
  // Connections.
  row('POST /v1/connections', 'edit', 201, { body: (who) => unreachableConnection(`made-by-${who}`) }),
  row('PUT /v1/connections/dst', 'edit', 200, {
    body: () => ({ type: 'postgres', dsn: 'postgres://u:p@127.0.0.1:1/dst' }),
  }),
  row('DELETE /v1/connections/doomed-:who', 'edit', 204),
  // Pipelines.
  row('POST /v1/pipelines', 'edit', 201, { body: (who) => pipelineBody(`made-by-${who}`) }),
  row('PUT /v1/pipelines/shared', 'edit', 200, {
    body: () => ({ source: { connection: 'src', tables: ['public.orders'] }, sink: { connection: 'dst' } }),
  }),
  row('DELETE /v1/pipelines/doomed-:who?force=true', 'edit', 204),
  // Operations: a stopped pipeline cannot be paused (409, past the guard); a backfill is accepted.
  row('PUT /v1/pipelines/shared/state', 'operate', 409, { body: () => ({ state: 'pause' }) }),
  row('POST /v1/pipelines/shared/backfill', 'operate', 202, { body: () => ({ tables: ['public.orders'] }) }),
  // Schema decisions: nothing waits for review (409, past the guard).
  row('POST /v1/pipelines/shared/schema/approve', 'edit', 409, { body: () => ({}) }),
  row('POST /v1/pipelines/shared/schema/reject', 'edit', 409, { body: () => ({}) }),
  // Tokens: any role makes and revokes its own.
  row('POST /v1/tokens', 'read', 201, { body: (who) => ({ name: `matrix-${who}`, lifetime_hours: 1 }) }),
  row('DELETE /v1/tokens/<own token>', 'read', 204, { path: (who) => `/v1/tokens/${ownToken.get(who)}` }),
  // A sample of the organization endpoints. The guard runs before the body is read, so `{}` gets
  // 400 from an allowed caller and changes nothing.
  row('GET /v1/users', 'organization', 200),
  row('POST /v1/users', 'organization', 400, { body: () => ({}) }),
  row('GET /v1/workspaces', 'organization', 200),
  row('GET /v1/projects', 'organization', 200),
  row('POST /v1/projects', 'organization', 400, { body: () => ({}) }),
  row('GET /v1/roles', 'organization', 200),
  row('GET /v1/role-bindings', 'organization', 200),
  row('POST /v1/role-bindings', 'organization', 400, { body: () => ({}) }),
  row('GET /v1/audit-events', 'organization', 200),
  row('PATCH /v1/organization', 'organization', 400, { body: () => ({}) }),
];

/** The token each caller made in set-up, revoked by the DELETE /v1/tokens/:id row. */
const ownToken = new Map<Caller, string>();

function expectForbidden(res: Answer, what: string) {
  expect(res.status, `${what}: ${res.text}`).toBe(403);
  expect(res.body, what).toMatchObject({ code: 'FORBIDDEN', error: expect.any(String) });
}

describe('authentication enabled: roles', () => {
  let service: TestService;
  let fixtures: AuthFixtures;
  const callers = new Map<Caller, ApiCaller>();
  const users = new Map<Caller, FixtureUser>();

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'auth_roles');
    service = await startTestService(enableAuth(testConfig(storeUrl)));
    fixtures = await AuthFixtures.open(storeUrl);
    const onDefault = projectScope(DEFAULT_PROJECT_ID);
    for (const role of ['viewer', 'operator', 'editor', 'admin'] as const) {
      users.set(role, await fixtures.userWith(`${role}@example.com`, role, onDefault));
    }
    users.set('org-admin', await fixtures.userWith('org-admin@example.com', 'admin', organizationScope));
    for (const who of CALLERS) callers.set(who, await signIn(service.url, users.get(who) as FixtureUser));

    // Records of the default project the matrix acts on, made by the organization admin.
    const org = callers.get('org-admin') as ApiCaller;
    const made: Answer[] = [];
    for (const name of ['src', 'dst'])
      made.push(await org.call('POST', '/v1/connections', unreachableConnection(name)));
    made.push(await org.call('POST', '/v1/pipelines', pipelineBody('shared')));
    for (const who of CALLERS) {
      made.push(await org.call('POST', '/v1/connections', unreachableConnection(`doomed-${who}`)));
      made.push(await org.call('POST', '/v1/pipelines', pipelineBody(`doomed-${who}`)));
      const token = await (callers.get(who) as ApiCaller).call('POST', '/v1/tokens', { name: `own-${who}` });
      made.push(token);
      ownToken.set(who, token.body.id);
    }
    for (const res of made) expect(res.status, res.text).toBe(201);
  });
  afterAll(async () => {
    await fixtures?.close();
    await service?.stop();
  });

  describe('the matrix: each caller against each guarded endpoint', () => {
    const cases = ROWS.flatMap((row) => CALLERS.map((who) => ({ row, who })));
    it.each(cases)('$row.route ($row.need) as $who', async ({ row, who }) => {
      const [method, route] = row.route.split(' ') as [string, string];
      const path = row.path?.(who) ?? route.replaceAll(':who', who);
      const what = `${who}: ${method} ${path}`;
      const res = await (callers.get(who) as ApiCaller).call(method, path, row.body?.(who));
      if (ALLOWED[row.need].includes(who)) {
        expect(res.status, `${what}: ${res.text}`).not.toBe(403);
        expect(res.status, `${what}: ${res.text}`).toBe(row.allowedStatus);
      } else {
        expectForbidden(res, what);
      }
    });

    it('left what the refused callers tried to delete in place, and removed what the others deleted', async () => {
      const org = callers.get('org-admin') as ApiCaller;
      for (const who of CALLERS) {
        const kept = !ALLOWED.edit.includes(who);
        expect((await org.call('GET', `/v1/connections/doomed-${who}`)).status, who).toBe(kept ? 200 : 404);
        expect((await org.call('GET', `/v1/pipelines/doomed-${who}`)).status, who).toBe(kept ? 200 : 404);
        expect((await org.call('GET', `/v1/connections/made-by-${who}`)).status, who).toBe(kept ? 404 : 200);
      }
    });

    it('lets every role read', async () => {
      for (const who of CALLERS) {
        const caller = callers.get(who) as ApiCaller;
        for (const path of ['/v1/connections', '/v1/pipelines', '/v1/pipelines/shared', '/v1/tokens']) {
          expect((await caller.call('GET', path)).status, `${who} GET ${path}`).toBe(200);
        }
      }
    });
  });

  describe('a role bound at workspace scope', () => {
    let caller: ApiCaller;
    let inWorkspace: string[];

    beforeAll(async () => {
      const workspace = await fixtures.workspace('analytics');
      inWorkspace = [
        await fixtures.project('reports', workspace),
        await fixtures.project('forecasts', workspace),
      ];
      const outside = await fixtures.project('billing');
      const user = await fixtures.userWith('ws-editor@example.com', 'editor', workspaceScope(workspace));
      // A weaker role in a project outside the workspace, so that the editor role is seen not to reach it.
      await fixtures.bind(user, 'viewer', projectScope(outside));
      caller = await signIn(service.url, user, 'billing');
    });

    it('applies to each project of the workspace', async () => {
      for (const project of inWorkspace) {
        const switched = await caller.call('PUT', '/v1/auth/session', { project });
        expect(switched.status, switched.text).toBe(200);
        expect(switched.body.role).toBe('editor');
        const created = await caller.call('POST', '/v1/connections', unreachableConnection('ws-made'));
        expect(created.status, created.text).toBe(201);
      }
    });

    it('does not apply to a project of another workspace', async () => {
      const switched = await caller.call('PUT', '/v1/auth/session', { project: 'billing' });
      expect(switched.body.role).toBe('viewer');
      expectForbidden(
        await caller.call('POST', '/v1/connections', unreachableConnection('ws-made')),
        'workspace editor in another workspace',
      );
      expect((await caller.call('GET', '/v1/connections')).status).toBe(200);
      const inDefault = await caller.call('PUT', '/v1/auth/session', { project: 'default' });
      expect(inDefault.status).toBe(404);
      expect(inDefault.body.code).toBe('NOT_FOUND');
    });
  });

  describe('token roles', () => {
    const bearer = (token: string) => ApiCaller.withToken(service.url, token);

    it("acts with its user's role when made without one", async () => {
      const made = await (callers.get('operator') as ApiCaller).call('POST', '/v1/tokens', { name: 'ops' });
      expect(made.status).toBe(201);
      expect(made.body.role).toBeNull();
      const token = bearer(made.body.token);
      expect((await token.call('GET', '/v1/auth/session')).body).toMatchObject({
        via: 'token',
        role: 'operator',
      });
      expect((await token.call('PUT', '/v1/pipelines/shared/state', { state: 'pause' })).status).toBe(409);
      expectForbidden(
        await token.call('POST', '/v1/connections', unreachableConnection('x')),
        'operator token',
      );
    });

    it("narrows to the token's role: an admin's token capped at viewer may read but not create", async () => {
      const made = await (callers.get('admin') as ApiCaller).call('POST', '/v1/tokens', {
        name: 'read-only',
        role: 'viewer',
      });
      expect(made.status, made.text).toBe(201);
      expect(made.body.role).toBe('viewer');
      const token = bearer(made.body.token);
      expect((await token.call('GET', '/v1/auth/session')).body).toMatchObject({ role: 'viewer' });
      expect((await token.call('GET', '/v1/pipelines')).status).toBe(200);
      expectForbidden(
        await token.call('POST', '/v1/connections', unreachableConnection('capped')),
        'viewer cap',
      );
      expectForbidden(await token.call('POST', '/v1/pipelines', pipelineBody('capped')), 'viewer cap');
      expectForbidden(
        await token.call('PUT', '/v1/pipelines/shared/state', { state: 'pause' }),
        'viewer cap, operate',
      );
    });

    it("does not carry an organization admin's organization powers once capped below admin", async () => {
      const org = callers.get('org-admin') as ApiCaller;
      const full = await org.call('POST', '/v1/tokens', { name: 'org-full' });
      const capped = await org.call('POST', '/v1/tokens', { name: 'org-editor', role: 'editor' });
      expect((await bearer(full.body.token).call('GET', '/v1/users')).status).toBe(200);
      expectForbidden(
        await bearer(capped.body.token).call('GET', '/v1/users'),
        'org admin token capped at editor',
      );
      expect(
        (await bearer(capped.body.token).call('POST', '/v1/connections', unreachableConnection('by-capped')))
          .status,
      ).toBe(201);
    });

    it("lets a project admin revoke anyone's token of the project, and others only their own", async () => {
      const viewer = callers.get('viewer') as ApiCaller;
      const made = await viewer.call('POST', '/v1/tokens', { name: 'revoke-me', lifetime_hours: 1 });
      expect(made.status).toBe(201);
      for (const who of ['operator', 'editor'] as const) {
        const res = await (callers.get(who) as ApiCaller).call('DELETE', `/v1/tokens/${made.body.id}`);
        expect(res.status, `${who} revoking the viewer's token`).toBe(404);
        expect(res.body.code).toBe('NOT_FOUND');
      }
      expect((await bearer(made.body.token).call('GET', '/v1/pipelines')).status).toBe(200);
      expect(
        (await (callers.get('admin') as ApiCaller).call('DELETE', `/v1/tokens/${made.body.id}`)).status,
      ).toBe(204);
      expect((await bearer(made.body.token).call('GET', '/v1/pipelines')).status).toBe(401);
    });

    it("refuses a token with a role above its user's with 403", async () => {
      for (const [who, role] of [
        ['viewer', 'operator'],
        ['operator', 'editor'],
        ['editor', 'admin'],
      ] as const) {
        const res = await (callers.get(who) as ApiCaller).call('POST', '/v1/tokens', {
          name: `above-${who}`,
          role,
        });
        expectForbidden(res, `${who} asking for ${role}`);
      }
      const same = await (callers.get('viewer') as ApiCaller).call('POST', '/v1/tokens', {
        name: 'same',
        role: 'viewer',
      });
      expect(same.status).toBe(201);
      const tokens = await fixtures.query("SELECT name FROM api_tokens WHERE name LIKE 'above-%'");
      expect(tokens.rows).toEqual([]);
    });
  });
});
