import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Answer, ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  FIXTURE_PASSWORD,
  organizationScope,
  pipelineBody,
  projectScope,
  signIn,
  unreachableConnection,
} from '../support/auth-fixtures.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

const names = (res: Answer) => (res.body as { name: string }[]).map((r) => r.name).sort();

function expectNotFound(res: Answer, what: string) {
  expect(res.status, `${what}: ${res.text}`).toBe(404);
  expect(res.body, what).toMatchObject({ code: 'NOT_FOUND' });
}

/**
 * Projects A and B each hold connections `src` and `dst` and a pipeline `orders` (the same names),
 * and records of their own: `a-conn`/`a-only` in A, `b-conn`/`b-only` in B.
 */
describe('authentication enabled: project isolation', () => {
  let service: TestService;
  let fixtures: AuthFixtures;
  let projectA: string;
  let projectB: string;
  /** Signed in to A; an editor there and nowhere else. */
  let alice: ApiCaller;
  /** An editor in A and a viewer in B; signed in to A. */
  let bob: ApiCaller;
  /** An organization admin, who sees either project once switched to it. */
  let admin: ApiCaller;
  const ordersId: Record<'A' | 'B', string> = { A: '', B: '' };

  beforeAll(async () => {
    const storeUrl = await createDatabase(cluster.adminUrl, 'auth_isolation');
    service = await startTestService(enableAuth(testConfig(storeUrl)));
    fixtures = await AuthFixtures.open(storeUrl);
    projectA = await fixtures.project('project-a');
    projectB = await fixtures.project('project-b');
    const adminUser = await fixtures.userWith('root@example.com', 'admin', organizationScope);
    const aliceUser = await fixtures.userWith('alice@example.com', 'editor', projectScope(projectA));
    const bobUser = await fixtures.userWith('bob@example.com', 'editor', projectScope(projectA));
    await fixtures.bind(bobUser, 'viewer', projectScope(projectB));

    admin = await signIn(service.url, adminUser);
    for (const [key, project, own] of [
      ['A', 'project-a', 'a'],
      ['B', 'project-b', 'b'],
    ] as const) {
      expect((await admin.call('PUT', '/v1/auth/session', { project })).status).toBe(200);
      const made = [
        await admin.call('POST', '/v1/connections', unreachableConnection('src')),
        await admin.call('POST', '/v1/connections', unreachableConnection('dst')),
        await admin.call('POST', '/v1/connections', unreachableConnection(`${own}-conn`)),
        await admin.call('POST', '/v1/pipelines', pipelineBody('orders')),
        await admin.call('POST', '/v1/pipelines', pipelineBody(`${own}-only`)),
      ];
      for (const res of made) expect(res.status, res.text).toBe(201);
      ordersId[key] = made[3]?.body.id;
    }
    alice = await signIn(service.url, aliceUser);
    bob = await signIn(service.url, bobUser, 'project-a');
  });
  afterAll(async () => {
    await fixtures?.close();
    await service?.stop();
  });

  /** B's records, as the organization admin sees them in B. */
  async function recordsOfB() {
    expect((await admin.call('PUT', '/v1/auth/session', { project: 'project-b' })).status).toBe(200);
    return {
      connections: names(await admin.call('GET', '/v1/connections')),
      pipelines: names(await admin.call('GET', '/v1/pipelines')),
      orders: (await admin.call('GET', '/v1/pipelines/orders')).body,
    };
  }

  describe('a user bound only in A', () => {
    it('starts in A and lists only its records', async () => {
      const me = await alice.call('GET', '/v1/auth/session');
      expect(me.body).toMatchObject({ project: { id: projectA, name: 'project-a' }, role: 'editor' });
      expect(me.body.projects).toEqual([{ id: projectA, name: 'project-a', role: 'editor' }]);
      expect(names(await alice.call('GET', '/v1/connections'))).toEqual(['a-conn', 'dst', 'src']);
      expect(names(await alice.call('GET', '/v1/pipelines'))).toEqual(['a-only', 'orders']);
    });

    it("gets A's record where both projects use the same name", async () => {
      const orders = await alice.call('GET', '/v1/pipelines/orders');
      expect(orders.status).toBe(200);
      expect(orders.body).toMatchObject({ id: ordersId.A, project_id: projectA });
      const src = await alice.call('GET', '/v1/connections/src');
      expect(src.status).toBe(200);
    });

    it("gets 404 NOT_FOUND for every read of B's records by name", async () => {
      for (const path of [
        '/v1/connections/b-conn',
        '/v1/pipelines/b-only',
        '/v1/pipelines/b-only/metrics',
        '/v1/pipelines/b-only/progress',
        '/v1/pipelines/b-only/runs',
        '/v1/pipelines/b-only/schema/proposed',
      ]) {
        expectNotFound(await alice.call('GET', path), `GET ${path}`);
      }
    });

    it("gets 404 NOT_FOUND for every change to B's records, and B's records stay as they were", async () => {
      const before = await recordsOfB();
      const attempts: [string, string, unknown?][] = [
        ['PUT', '/v1/connections/b-conn', { type: 'postgres', dsn: 'postgres://x:y@127.0.0.1:1/taken' }],
        ['DELETE', '/v1/connections/b-conn'],
        ['DELETE', '/v1/connections/b-conn?force=true'],
        [
          'PUT',
          '/v1/pipelines/b-only',
          { source: { connection: 'src', tables: ['public.x'] }, sink: { connection: 'dst' } },
        ],
        ['PUT', '/v1/pipelines/b-only/state', { state: 'start' }],
        ['PUT', '/v1/pipelines/b-only/state', { state: 'stop' }],
        ['POST', '/v1/pipelines/b-only/backfill', { tables: ['public.orders'] }],
        ['POST', '/v1/pipelines/b-only/schema/approve', {}],
        ['POST', '/v1/pipelines/b-only/schema/reject', {}],
        ['DELETE', '/v1/pipelines/b-only'],
        ['DELETE', '/v1/pipelines/b-only?force=true'],
      ];
      for (const [method, path, body] of attempts) {
        expectNotFound(await alice.call(method, path, body), `${method} ${path}`);
      }
      const after = await recordsOfB();
      expect(after).toEqual(before);
      expect(after.connections).toEqual(['b-conn', 'dst', 'src']);
      expect(after.pipelines).toEqual(['b-only', 'orders']);
    });

    it("changes A's record, never B's, where both use the same name", async () => {
      const replaced = await alice.call('PUT', '/v1/pipelines/orders', {
        source: { connection: 'src', tables: ['public.orders', 'public.lines'] },
        sink: { connection: 'dst' },
      });
      expect(replaced.status, replaced.text).toBe(200);
      expect(replaced.body).toMatchObject({ id: ordersId.A, generation: 2 });
      const { orders } = await recordsOfB();
      expect(orders).toMatchObject({ id: ordersId.B, generation: 1, source: { tables: ['public.orders'] } });
    });

    it('is refused a switch to B with 404, as for a project that does not exist, and stays in A', async () => {
      for (const project of ['project-b', projectB, 'no-such-project']) {
        expectNotFound(await alice.call('PUT', '/v1/auth/session', { project }), `switch to ${project}`);
      }
      const me = await alice.call('GET', '/v1/auth/session');
      expect(me.body.project.id).toBe(projectA);
      expect(names(await alice.call('GET', '/v1/pipelines'))).toEqual(['a-only', 'orders']);
    });

    it('cannot start a session in B either', async () => {
      const browser = new ApiCaller(service.url);
      const res = await browser.login('alice@example.com', FIXTURE_PASSWORD, 'project-b');
      expectNotFound(res, 'login into B');
      expect(browser.cookie).toBeUndefined();
    });
  });

  describe('a user with a role in both projects', () => {
    it('switches to B and then sees only B, with its role there', async () => {
      const switched = await bob.call('PUT', '/v1/auth/session', { project: 'project-b' });
      expect(switched.status, switched.text).toBe(200);
      expect(switched.body).toMatchObject({ project: { id: projectB, name: 'project-b' }, role: 'viewer' });
      expect(names(await bob.call('GET', '/v1/connections'))).toEqual(['b-conn', 'dst', 'src']);
      expect(names(await bob.call('GET', '/v1/pipelines'))).toEqual(['b-only', 'orders']);
      expect((await bob.call('GET', '/v1/pipelines/orders')).body.id).toBe(ordersId.B);
      expectNotFound(await bob.call('GET', '/v1/pipelines/a-only'), "A's pipeline from B");
      // A viewer in B: editing there is refused although it is an editor in A.
      const refused = await bob.call('DELETE', '/v1/connections/b-conn');
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('FORBIDDEN');
    });

    it('switches back to A', async () => {
      const switched = await bob.call('PUT', '/v1/auth/session', { project: projectA });
      expect(switched.body).toMatchObject({ project: { id: projectA }, role: 'editor' });
      expect(names(await bob.call('GET', '/v1/pipelines'))).toEqual(['a-only', 'orders']);
    });
  });

  describe('a token made in A', () => {
    let token: ApiCaller;

    beforeAll(async () => {
      expect((await bob.call('PUT', '/v1/auth/session', { project: 'project-a' })).status).toBe(200);
      const made = await bob.call('POST', '/v1/tokens', { name: 'ci-a', lifetime_hours: 1 });
      expect(made.status, made.text).toBe(201);
      expect(made.body.project_id).toBe(projectA);
      token = ApiCaller.withToken(service.url, made.body.token);
    });

    it('sees only A', async () => {
      expect(names(await token.call('GET', '/v1/connections'))).toEqual(['a-conn', 'dst', 'src']);
      expect(names(await token.call('GET', '/v1/pipelines'))).toEqual(['a-only', 'orders']);
      expect((await token.call('GET', '/v1/pipelines/orders')).body.id).toBe(ordersId.A);
      expectNotFound(await token.call('GET', '/v1/pipelines/b-only'), 'token reads B');
      expectNotFound(
        await token.call('PUT', '/v1/pipelines/b-only/state', { state: 'start' }),
        'token starts B',
      );
      expectNotFound(await token.call('DELETE', '/v1/connections/b-conn'), 'token deletes B');
    });

    it('cannot be switched to B, and stays in A when its user switches its session to B', async () => {
      const refused = await token.call('PUT', '/v1/auth/session', { project: 'project-b' });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('VALIDATION_FAILED');
      expect((await bob.call('PUT', '/v1/auth/session', { project: 'project-b' })).status).toBe(200);
      expect((await token.call('GET', '/v1/auth/session')).body.project.id).toBe(projectA);
      expect(names(await token.call('GET', '/v1/pipelines'))).toEqual(['a-only', 'orders']);
      expectNotFound(await token.call('GET', '/v1/pipelines/b-only'), 'token reads B after the switch');
    });

    it("lists only A's tokens in A", async () => {
      const inB = await bob.call('GET', '/v1/tokens');
      expect(inB.body.map((t: { name: string }) => t.name)).not.toContain('ci-a');
      const inA = await token.call('GET', '/v1/tokens');
      expect(inA.body.map((t: { name: string }) => t.name)).toContain('ci-a');
    });

    it('cannot be revoked from B, even by an admin acting in B', async () => {
      expect((await admin.call('PUT', '/v1/auth/session', { project: 'project-a' })).status).toBe(200);
      // A project admin lists everyone's tokens of the project.
      const listed = (await admin.call('GET', '/v1/tokens')).body as { id: string; name: string }[];
      const ciA = listed.find((t) => t.name === 'ci-a') as { id: string };
      expect(ciA).toBeDefined();
      expect((await admin.call('PUT', '/v1/auth/session', { project: 'project-b' })).status).toBe(200);
      expectNotFound(await admin.call('DELETE', `/v1/tokens/${ciA.id}`), "revoking A's token from B");
      expect((await token.call('GET', '/v1/pipelines')).status).toBe(200);
    });
  });
});
