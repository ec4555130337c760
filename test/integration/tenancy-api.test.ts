import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const DEFAULT_ORGANIZATION_ID = '00000000-0000-4000-8000-000000000001';
const DEFAULT_WORKSPACE_ID = '00000000-0000-4000-8000-000000000003';
const DEFAULT_PROJECT_ID = '00000000-0000-4000-8000-000000000002';
const UNKNOWN_ID = '7d9f1c2e-3b4a-4c5d-8e6f-0123456789ab';
const STRONG_PASSWORD = 'Vq8#mZt2!pLr9wXk';

describe.each(inject('pgClusters'))('tenancy API on $label', (cluster) => {
  let service: TestService;
  let db: pg.Client;
  let storeUrl: string;
  // Every response body, to check that no password hash ever leaves the service.
  const bodies: string[] = [];

  const request = async (method: string, path: string, body?: unknown) => {
    const res = await service.request(method, path, body);
    bodies.push(JSON.stringify(res.body ?? null));
    return res;
  };

  const createUser = async (email: string, extra: Record<string, unknown> = {}) => {
    const res = await request('POST', '/v1/users', { email, display_name: email.split('@')[0], ...extra });
    expect(res.status).toBe(201);
    return res.body as { id: string; email: string };
  };

  const bind = async (body: Record<string, unknown>) => {
    const res = await request('POST', '/v1/role-bindings', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string };
  };

  /** Starts a session row for a user, as a sign-in would, and tells whether it still exists. */
  const openSession = async (userId: string) => {
    const idHash = `test-${userId}-${Math.random()}`;
    await db.query(
      `INSERT INTO sessions (id_hash, user_id, project_id, expires_at, absolute_expires_at)
       VALUES ($1, $2, $3, now() + interval '1 hour', now() + interval '1 day')`,
      [idHash, userId, DEFAULT_PROJECT_ID],
    );
    return async () => (await db.query('SELECT 1 FROM sessions WHERE id_hash = $1', [idHash])).rowCount === 1;
  };

  beforeAll(async () => {
    storeUrl = await createDatabase(cluster.adminUrl, 'api_tenancy');
    service = await startTestService(testConfig(storeUrl));
    db = new pg.Client({ connectionString: storeUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await service?.stop();
  });

  describe('users', () => {
    it('creates a user who signs in only through SSO when no password is given', async () => {
      const res = await request('POST', '/v1/users', { email: 'Ada@Example.com', display_name: 'Ada' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        email: 'Ada@Example.com',
        display_name: 'Ada',
        disabled: false,
        password_set: false,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        updated_at: expect.any(String),
      });
    });

    it('creates a user with a password, stored as an argon2id hash and never returned', async () => {
      const res = await request('POST', '/v1/users', {
        email: 'grace@example.com',
        display_name: 'Grace Hopper',
        password: STRONG_PASSWORD,
      });
      expect(res.status).toBe(201);
      expect(res.body.password_set).toBe(true);
      expect(res.body).not.toHaveProperty('password_hash');
      expect(res.body).not.toHaveProperty('password');
      const { rows } = await db.query('SELECT password_hash FROM users WHERE id = $1', [res.body.id]);
      expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
    });

    it('refuses a duplicate e-mail, whatever its case, with 409 ALREADY_EXISTS', async () => {
      const res = await request('POST', '/v1/users', { email: 'ada@EXAMPLE.com', display_name: 'Other Ada' });
      expect(res).toMatchObject({ status: 409, body: { code: 'ALREADY_EXISTS' } });
      expect(res.body.error).toContain('ada@EXAMPLE.com');
    });

    it.each([
      ['short1', 'password: must be at least 12 characters'],
      ['password1234', 'password: is too easy to guess'],
      ['linus@example.com!', 'password: is too easy to guess'],
      ['x'.repeat(257), 'password: must be at most 256 characters'],
    ])('refuses the weak password %j with 422 and the reason', async (password, reason) => {
      const res = await request('POST', '/v1/users', {
        email: 'linus@example.com',
        display_name: 'Linus',
        password,
      });
      expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.error).toContain(reason);
      expect((await request('GET', '/v1/users')).body.map((u: any) => u.email)).not.toContain(
        'linus@example.com',
      );
    });

    it.each([
      [{ display_name: 'x' }, 400, 'BAD_REQUEST', 'email: is required'],
      [{ email: 'a@b.example' }, 400, 'BAD_REQUEST', 'display_name: is required'],
      [
        { email: 'a@b.example', display_name: 'x', role: 'admin' },
        400,
        'BAD_REQUEST',
        'role: is not a known field',
      ],
      [{ email: 'a@b.example', display_name: 5 }, 400, 'BAD_REQUEST', 'display_name'],
      [{ email: 'not an e-mail', display_name: 'x' }, 422, 'VALIDATION_FAILED', 'email: must be an e-mail'],
      [{ email: 'a@b', display_name: 'x' }, 422, 'VALIDATION_FAILED', 'email: must be an e-mail'],
      [{ email: 'a@b.example', display_name: '   ' }, 422, 'VALIDATION_FAILED', 'display_name: must be'],
      [
        { email: 'a@b.example', display_name: 'a\u0000b' },
        422,
        'VALIDATION_FAILED',
        'display_name: must not contain a NUL',
      ],
    ])('refuses %j with %i %s', async (body, status, code, message) => {
      const res = await request('POST', '/v1/users', body);
      expect(res).toMatchObject({ status, body: { code } });
      expect(res.body.error).toContain(message);
    });

    it('lists and gets users', async () => {
      const list = await request('GET', '/v1/users');
      expect(list.status).toBe(200);
      expect(list.body.map((u: any) => u.email)).toEqual(['Ada@Example.com', 'grace@example.com']);
      const one = await request('GET', `/v1/users/${list.body[1].id}`);
      expect(one).toMatchObject({ status: 200, body: { email: 'grace@example.com', password_set: true } });
    });

    it.each([
      ['GET', 'not-a-uuid'],
      ['GET', UNKNOWN_ID],
      ['GET', `${UNKNOWN_ID}x`],
      ['PATCH', 'not-a-uuid'],
      ['DELETE', 'not-a-uuid'],
      ['DELETE', UNKNOWN_ID],
    ])('%s /v1/users/%s is a 404 NOT_FOUND', async (method, id) => {
      const res = await request(
        method,
        `/v1/users/${id}`,
        method === 'PATCH' ? { disabled: true } : undefined,
      );
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    });

    it('refuses a NUL in the path as an invalid parameter: 400 BAD_REQUEST', async () => {
      expect(await request('GET', '/v1/users/%00')).toMatchObject({
        status: 400,
        body: { code: 'BAD_REQUEST' },
      });
    });

    it('renames a user and keeps its sessions', async () => {
      const user = await createUser('rename@example.com');
      const alive = await openSession(user.id);
      const res = await request('PATCH', `/v1/users/${user.id}`, { display_name: 'Renamed' });
      expect(res).toMatchObject({ status: 200, body: { display_name: 'Renamed', disabled: false } });
      expect(await alive()).toBe(true);
    });

    it('sets a password, ending the user’s sessions; a weak one is refused and ends nothing', async () => {
      const user = await createUser('pw@example.com');
      const alive = await openSession(user.id);
      const weak = await request('PATCH', `/v1/users/${user.id}`, { password: 'pw@example.com1' });
      expect(weak).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(weak.body.error).toMatch(/^password: /);
      expect(await alive()).toBe(true);
      const res = await request('PATCH', `/v1/users/${user.id}`, { password: STRONG_PASSWORD });
      expect(res).toMatchObject({ status: 200, body: { password_set: true } });
      expect(await alive()).toBe(false);
    });

    it('disables and enables a user, ending its sessions when disabled', async () => {
      const user = await createUser('off@example.com');
      const alive = await openSession(user.id);
      const off = await request('PATCH', `/v1/users/${user.id}`, { disabled: true });
      expect(off).toMatchObject({ status: 200, body: { disabled: true } });
      expect(await alive()).toBe(false);
      const on = await request('PATCH', `/v1/users/${user.id}`, { disabled: false });
      expect(on).toMatchObject({ status: 200, body: { disabled: false } });
    });

    it.each([
      [{}, 400, 'BAD_REQUEST'],
      [{ email: 'new@example.com' }, 400, 'BAD_REQUEST'],
      [{ disabled: 'yes' }, 400, 'BAD_REQUEST'],
      [{ display_name: '' }, 422, 'VALIDATION_FAILED'],
    ])('refuses the update %j with %i', async (body, status, code) => {
      const [user] = (await request('GET', '/v1/users')).body;
      const res = await request('PATCH', `/v1/users/${user.id}`, body);
      expect(res).toMatchObject({ status, body: { code } });
    });

    it('deletes a user with its bindings and sessions', async () => {
      const user = await createUser('gone@example.com');
      await bind({ user_id: user.id, role: 'viewer', scope_type: 'project', scope_id: DEFAULT_PROJECT_ID });
      const alive = await openSession(user.id);
      expect((await request('DELETE', `/v1/users/${user.id}`)).status).toBe(204);
      expect((await request('GET', `/v1/users/${user.id}`)).status).toBe(404);
      expect(await alive()).toBe(false);
      expect((await request('GET', `/v1/role-bindings?user_id=${user.id}`)).body).toEqual([]);
    });
  });

  describe('the last organization admin', () => {
    let first: { id: string };
    let firstBinding: { id: string };

    beforeAll(async () => {
      first = await createUser('admin1@example.com');
      firstBinding = await bind({ user_id: first.id, role: 'admin', scope_type: 'organization' });
    });

    it('cannot be disabled, deleted or unbound', async () => {
      for (const [method, path, body] of [
        ['PATCH', `/v1/users/${first.id}`, { disabled: true }],
        ['DELETE', `/v1/users/${first.id}`, undefined],
        ['DELETE', `/v1/role-bindings/${firstBinding.id}`, undefined],
      ] as const) {
        const res = await request(method, path, body);
        expect(res, `${method} ${path}`).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
        expect(res.body.error).toContain('admin1@example.com');
      }
      const user = await request('GET', `/v1/users/${first.id}`);
      expect(user.body.disabled).toBe(false);
      expect((await request('GET', `/v1/role-bindings/${firstBinding.id}`)).status).toBe(200);
    });

    it('may still be renamed or given a new password', async () => {
      const res = await request('PATCH', `/v1/users/${first.id}`, {
        display_name: 'First Admin',
        password: STRONG_PASSWORD,
      });
      expect(res).toMatchObject({ status: 200, body: { display_name: 'First Admin', password_set: true } });
    });

    it('can go once another enabled admin exists, and the other is then the last', async () => {
      const second = await createUser('admin2@example.com');
      const secondBinding = await bind({
        user_id: second.id,
        role: 'admin',
        scope_type: 'organization',
        scope_id: DEFAULT_ORGANIZATION_ID,
      });
      expect((await request('PATCH', `/v1/users/${first.id}`, { disabled: true })).status).toBe(200);
      // The first is disabled and no longer counts: the second is now the last.
      const refused = await request('DELETE', `/v1/role-bindings/${secondBinding.id}`);
      expect(refused).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
      const refusedDisable = await request('PATCH', `/v1/users/${second.id}`, { disabled: true });
      expect(refusedDisable).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
      // Enabling the first again makes the second's binding removable.
      expect((await request('PATCH', `/v1/users/${first.id}`, { disabled: false })).status).toBe(200);
      expect((await request('DELETE', `/v1/role-bindings/${secondBinding.id}`)).status).toBe(204);
      const stillLast = await request('DELETE', `/v1/users/${first.id}`);
      expect(stillLast).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
      // A user without the admin role goes freely.
      expect((await request('DELETE', `/v1/users/${second.id}`)).status).toBe(204);
    });

    it('does not count admin roles below organization scope', async () => {
      const other = await createUser('wsadmin@example.com');
      await bind({ user_id: other.id, role: 'admin', scope_type: 'workspace', scope: 'default' });
      const res = await request('PATCH', `/v1/users/${first.id}`, { disabled: true });
      expect(res).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
    });

    it('counts admins only after a concurrent change to the admin set has committed', async () => {
      const other = await createUser('admin3@example.com');
      await bind({ user_id: other.id, role: 'admin', scope_type: 'organization' });
      // Another instance disables the first admin, holding the admin-set lock as the service does.
      const tx = new pg.Client({ connectionString: storeUrl });
      await tx.connect();
      try {
        await tx.query('BEGIN');
        await tx.query('SELECT 1 FROM organizations WHERE id = $1 FOR NO KEY UPDATE', [
          DEFAULT_ORGANIZATION_ID,
        ]);
        await tx.query('UPDATE users SET disabled = true WHERE id = $1', [first.id]);
        const pending = request('PATCH', `/v1/users/${other.id}`, { disabled: true });
        // The request has reached the admin-set lock and waits on it behind this transaction.
        await waitFor(
          async () =>
            (
              await db.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              )
            ).rows[0]?.n === 1,
          'the request to wait on the admin-set lock',
        );
        await tx.query('COMMIT');
        // Counted before that commit, the first would still look enabled and both would be disabled.
        expect(await pending).toMatchObject({ status: 409, body: { code: 'LAST_ADMIN' } });
      } finally {
        await tx.end();
      }
      expect((await request('PATCH', `/v1/users/${first.id}`, { disabled: false })).status).toBe(200);
    });
  });

  describe('workspaces', () => {
    let analytics: { id: string };

    it('lists the default workspace with its project', async () => {
      const res = await request('GET', '/v1/workspaces');
      expect(res.status).toBe(200);
      expect(res.body).toContainEqual({
        id: DEFAULT_WORKSPACE_ID,
        name: 'default',
        project_count: 1,
        created_at: expect.any(String),
      });
    });

    it('creates, gets and renames a workspace', async () => {
      const created = await request('POST', '/v1/workspaces', { name: 'analytics' });
      expect(created).toMatchObject({ status: 201, body: { name: 'analytics', project_count: 0 } });
      analytics = created.body;
      expect((await request('GET', `/v1/workspaces/${analytics.id}`)).body.name).toBe('analytics');
      const renamed = await request('PATCH', `/v1/workspaces/${analytics.id}`, { name: 'data' });
      expect(renamed).toMatchObject({ status: 200, body: { id: analytics.id, name: 'data' } });
    });

    it.each([
      [{ name: 'data' }, 409, 'ALREADY_EXISTS'],
      [{ name: 'bad name!' }, 422, 'VALIDATION_FAILED'],
      [{ name: 'a'.repeat(64) }, 422, 'VALIDATION_FAILED'],
      [{}, 400, 'BAD_REQUEST'],
      [{ name: 'x', extra: true }, 400, 'BAD_REQUEST'],
    ])('refuses creating %j with %i', async (body, status, code) => {
      const res = await request('POST', '/v1/workspaces', body);
      expect(res).toMatchObject({ status, body: { code } });
    });

    it('refuses renaming onto another workspace’s name', async () => {
      const res = await request('PATCH', `/v1/workspaces/${analytics.id}`, { name: 'default' });
      expect(res).toMatchObject({ status: 409, body: { code: 'ALREADY_EXISTS' } });
    });

    it('refuses deleting the default workspace, or one that holds projects', async () => {
      const defaultDelete = await request('DELETE', `/v1/workspaces/${DEFAULT_WORKSPACE_ID}`);
      expect(defaultDelete).toMatchObject({ status: 409, body: { code: 'DEFAULT_NOT_DELETABLE' } });
      const project = await request('POST', '/v1/projects', { name: 'ws-holder', workspace: 'data' });
      expect(project.status).toBe(201);
      const busy = await request('DELETE', `/v1/workspaces/${analytics.id}`);
      expect(busy).toMatchObject({ status: 409, body: { code: 'WORKSPACE_IN_USE' } });
      expect(busy.body.error).toContain("'ws-holder'");
      expect((await request('DELETE', `/v1/projects/${project.body.id}`)).status).toBe(204);
    });

    it('deletes an empty workspace with the role bindings scoped to it', async () => {
      const user = await createUser('wsviewer@example.com');
      await bind({ user_id: user.id, role: 'viewer', scope_type: 'workspace', scope_id: analytics.id });
      expect((await request('DELETE', `/v1/workspaces/${analytics.id}`)).status).toBe(204);
      expect((await request('GET', `/v1/workspaces/${analytics.id}`)).status).toBe(404);
      expect((await request('GET', `/v1/role-bindings?scope_id=${analytics.id}`)).body).toEqual([]);
    });

    it.each(['nope', UNKNOWN_ID])('answers 404 for the workspace id %s', async (id) => {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { name: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const res = await request(method, `/v1/workspaces/${id}`, body);
        expect(res, method).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
      }
    });
  });

  describe('projects', () => {
    let sales: { id: string };
    let shop: { id: string };

    beforeAll(async () => {
      expect((await request('POST', '/v1/workspaces', { name: 'sales' })).status).toBe(201);
    });

    it('creates a project in the default workspace, or in one named', async () => {
      const plain = await request('POST', '/v1/projects', { name: 'plain' });
      expect(plain).toMatchObject({
        status: 201,
        body: { name: 'plain', workspace_id: DEFAULT_WORKSPACE_ID, workspace: 'default' },
      });
      const named = await request('POST', '/v1/projects', { name: 'shop', workspace: 'sales' });
      expect(named).toMatchObject({ status: 201, body: { name: 'shop', workspace: 'sales' } });
      shop = named.body;
      sales = { id: named.body.workspace_id };
    });

    it.each([
      [{ name: 'shop' }, 409, 'ALREADY_EXISTS', "project 'shop' already exists"],
      [{ name: 'default', workspace: 'sales' }, 409, 'ALREADY_EXISTS', 'already exists'],
      [
        { name: 'x', workspace: 'nowhere' },
        422,
        'VALIDATION_FAILED',
        "workspace: no workspace is named 'nowhere'",
      ],
      [{ name: 'no good' }, 422, 'VALIDATION_FAILED', 'name: must be'],
      [{ workspace: 'sales' }, 400, 'BAD_REQUEST', 'name: is required'],
    ])('refuses creating %j with %i', async (body, status, code, message) => {
      const res = await request('POST', '/v1/projects', body);
      expect(res).toMatchObject({ status, body: { code } });
      expect(res.body.error).toContain(message);
    });

    it('lists projects with their workspace, all or one workspace’s', async () => {
      const all = await request('GET', '/v1/projects');
      expect(all.status).toBe(200);
      expect(all.body.map((p: any) => `${p.workspace}/${p.name}`)).toEqual([
        'default/default',
        'default/plain',
        'sales/shop',
      ]);
      const some = await request('GET', '/v1/projects?workspace=sales');
      expect(some.body.map((p: any) => p.name)).toEqual(['shop']);
      const unknown = await request('GET', '/v1/projects?workspace=nowhere');
      expect(unknown).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
      const stray = await request('GET', '/v1/projects?workpsace=sales');
      expect(stray).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    });

    it('gets, renames and moves a project', async () => {
      expect((await request('GET', `/v1/projects/${shop.id}`)).body).toMatchObject({ name: 'shop' });
      const renamed = await request('PATCH', `/v1/projects/${shop.id}`, { name: 'store' });
      expect(renamed).toMatchObject({
        status: 200,
        body: { id: shop.id, name: 'store', workspace: 'sales' },
      });
      const moved = await request('PATCH', `/v1/projects/${shop.id}`, { workspace: 'default' });
      expect(moved).toMatchObject({
        status: 200,
        body: { name: 'store', workspace_id: DEFAULT_WORKSPACE_ID },
      });
      const both = await request('PATCH', `/v1/projects/${shop.id}`, { name: 'shop', workspace: 'sales' });
      expect(both).toMatchObject({ status: 200, body: { name: 'shop', workspace_id: sales.id } });
    });

    it.each([
      [{}, 400, 'BAD_REQUEST'],
      [{ name: 'plain' }, 409, 'ALREADY_EXISTS'],
      [{ workspace: 'nowhere' }, 422, 'VALIDATION_FAILED'],
      [{ name: 'bad name' }, 422, 'VALIDATION_FAILED'],
    ])('refuses the update %j with %i', async (body, status, code) => {
      const res = await request('PATCH', `/v1/projects/${shop.id}`, body);
      expect(res).toMatchObject({ status, body: { code } });
    });

    it('refuses deleting the default project', async () => {
      const res = await request('DELETE', `/v1/projects/${DEFAULT_PROJECT_ID}`);
      expect(res).toMatchObject({ status: 409, body: { code: 'DEFAULT_NOT_DELETABLE' } });
    });

    it('refuses deleting a project while it holds a connection or a pipeline', async () => {
      await db.query(
        `INSERT INTO connections (project_id, name, type, dsn) VALUES ($1, 'orders-db', 'postgres', 'postgres://h/db')`,
        [shop.id],
      );
      const res = await request('DELETE', `/v1/projects/${shop.id}`);
      expect(res).toMatchObject({ status: 409, body: { code: 'PROJECT_IN_USE' } });
      expect(res.body.error).toContain("connections 'orders-db'");
      await db.query(
        `INSERT INTO pipelines (project_id, name, source_connection, source_tables, sink_connection)
         VALUES ($1, 'orders', 'orders-db', '{public.orders}', 'orders-db')`,
        [shop.id],
      );
      const both = await request('DELETE', `/v1/projects/${shop.id}`);
      expect(both.body.error).toContain("pipelines 'orders' and connections 'orders-db'");
      await db.query('DELETE FROM pipelines WHERE project_id = $1', [shop.id]);
      await db.query('DELETE FROM connections WHERE project_id = $1', [shop.id]);
      expect((await request('GET', `/v1/projects/${shop.id}`)).status).toBe(200);
    });

    it('deletes an empty project with the role bindings scoped to it', async () => {
      const user = await createUser('shopper@example.com');
      await bind({ user_id: user.id, role: 'editor', scope_type: 'project', scope: 'shop' });
      expect((await request('DELETE', `/v1/projects/${shop.id}`)).status).toBe(204);
      expect((await request('GET', `/v1/projects/${shop.id}`)).status).toBe(404);
      expect((await request('GET', `/v1/role-bindings?user_id=${user.id}`)).body).toEqual([]);
    });

    it.each(['nope', UNKNOWN_ID])('answers 404 for the project id %s', async (id) => {
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { name: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const res = await request(method, `/v1/projects/${id}`, body);
        expect(res, method).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
      }
    });
  });

  describe('roles and role bindings', () => {
    let user: { id: string; email: string };
    let project: { id: string };

    beforeAll(async () => {
      user = await createUser('bound@example.com');
      project = (await request('POST', '/v1/projects', { name: 'bindings' })).body;
    });

    it('lists the roles with their descriptions and permissions', async () => {
      const res = await request('GET', '/v1/roles');
      expect(res.status).toBe(200);
      expect(res.body.map((r: any) => r.name)).toEqual(['viewer', 'operator', 'editor', 'admin']);
      expect(res.body[0]).toEqual({
        name: 'viewer',
        rank: 1,
        description: 'reads pipelines, connections, status and metrics',
        permissions: ['read'],
        manages_organization: false,
      });
      expect(res.body[3]).toMatchObject({
        permissions: ['read', 'operate', 'edit', 'manage'],
        manages_organization: true,
      });
    });

    it('binds roles at a workspace by name and at a project by id', async () => {
      const atWorkspace = await request('POST', '/v1/role-bindings', {
        user_id: user.id,
        role: 'operator',
        scope_type: 'workspace',
        scope: 'default',
      });
      expect(atWorkspace).toMatchObject({
        status: 201,
        body: {
          user_id: user.id,
          user_email: 'bound@example.com',
          role: 'operator',
          scope_type: 'workspace',
          scope_id: DEFAULT_WORKSPACE_ID,
          scope_name: 'default',
          source: 'manual',
        },
      });
      const atProject = await request('POST', '/v1/role-bindings', {
        user_id: user.id,
        role: 'editor',
        scope_type: 'project',
        scope_id: project.id,
      });
      expect(atProject).toMatchObject({
        status: 201,
        body: { scope_name: 'bindings', scope_id: project.id },
      });
    });

    it('lists bindings, filtered by user, scope type or scope', async () => {
      const mine = await request('GET', `/v1/role-bindings?user_id=${user.id}`);
      expect(mine.status).toBe(200);
      expect(mine.body.map((b: any) => `${b.role}@${b.scope_type}`)).toEqual([
        'editor@project',
        'operator@workspace',
      ]);
      const projects = await request('GET', `/v1/role-bindings?user_id=${user.id}&scope_type=project`);
      expect(projects.body.map((b: any) => b.role)).toEqual(['editor']);
      const atProject = await request('GET', `/v1/role-bindings?scope_id=${project.id}`);
      expect(atProject.body.map((b: any) => b.user_email)).toEqual(['bound@example.com']);
      const all = await request('GET', '/v1/role-bindings');
      expect(all.body.length).toBeGreaterThan(2);
      const nobody = await request('GET', `/v1/role-bindings?user_id=${UNKNOWN_ID}`);
      expect(nobody).toMatchObject({ status: 200, body: [] });
    });

    it('refuses the same binding twice with 409 ALREADY_EXISTS', async () => {
      const res = await request('POST', '/v1/role-bindings', {
        user_id: user.id,
        role: 'operator',
        scope_type: 'workspace',
        scope_id: DEFAULT_WORKSPACE_ID,
      });
      expect(res).toMatchObject({ status: 409, body: { code: 'ALREADY_EXISTS' } });
    });

    it.each([
      [{ role: 'owner' }, 'role: must be one of viewer, operator, editor, admin'],
      [{ scope_type: 'team' }, 'scope_type: must be one of organization, workspace, project'],
      [{ scope_type: 'project', scope_id: undefined }, 'scope_id: is required for a project scope'],
      [{ scope_id: UNKNOWN_ID }, `scope_id: no project has id '${UNKNOWN_ID}'`],
      [{ scope_id: 'not-a-uuid' }, 'scope_id: must be the id of'],
      [{ scope_id: undefined, scope: 'nowhere' }, "scope: no project is named 'nowhere'"],
      [{ scope: 'bindings' }, 'scope: give scope_id or scope'],
      [{ scope_type: 'workspace', scope_id: DEFAULT_PROJECT_ID }, 'scope_id: no workspace has id'],
      [
        { scope_type: 'organization', scope_id: DEFAULT_PROJECT_ID },
        "scope_id: the organization scope is the organization's id",
      ],
      [
        { scope_type: 'organization', scope_id: undefined, scope: 'default' },
        'scope: names a workspace or project',
      ],
      [{ user_id: UNKNOWN_ID }, `user_id: no user has id '${UNKNOWN_ID}'`],
      [{ user_id: 'bob' }, 'user_id: must be the id of the user'],
    ])('refuses %j with 422 naming the field', async (change, message) => {
      const body = {
        user_id: user.id,
        role: 'viewer',
        scope_type: 'project',
        scope_id: project.id,
        ...change,
      };
      const res = await request('POST', '/v1/role-bindings', body);
      expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.error).toContain(message);
    });

    it.each([
      ['/v1/role-bindings?user_id=bob', 400],
      ['/v1/role-bindings?scope_type=team', 400],
      ['/v1/role-bindings?role=admin', 400],
    ])('refuses the listing %s with %i', async (path, status) => {
      expect((await request('GET', path)).status).toBe(status);
    });

    it('gets and removes a binding; unknown or malformed ids are 404', async () => {
      const [binding] = (await request('GET', `/v1/role-bindings?user_id=${user.id}`)).body;
      expect((await request('GET', `/v1/role-bindings/${binding.id}`)).body).toEqual(binding);
      expect((await request('DELETE', `/v1/role-bindings/${binding.id}`)).status).toBe(204);
      for (const id of [binding.id, 'nope', UNKNOWN_ID]) {
        expect(await request('GET', `/v1/role-bindings/${id}`)).toMatchObject({ status: 404 });
        expect(await request('DELETE', `/v1/role-bindings/${id}`)).toMatchObject({
          status: 404,
          body: { code: 'NOT_FOUND' },
        });
      }
    });
  });

  it('documents every tenancy route in the OpenAPI document', async () => {
    // Read without recording: the document describes the hashing, it does not hold a hash.
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    for (const path of ['/v1/users', '/v1/workspaces', '/v1/projects', '/v1/role-bindings']) {
      expect(doc.paths[path].post.description, path).toBeTruthy();
      expect(doc.paths[`${path}/{id}`].delete.responses['204'], path).toBeDefined();
    }
    expect(doc.paths['/v1/roles'].get).toBeDefined();
    expect(doc.paths['/v1/users/{id}'].patch.description).toContain('LAST_ADMIN');
  });

  it('never returned a password hash', async () => {
    expect(bodies.length).toBeGreaterThan(50);
    for (const body of bodies) {
      expect(body).not.toContain('$argon2');
      expect(body).not.toContain('password_hash');
    }
  });
});
