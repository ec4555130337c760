import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ApiCaller, enableAuth } from '../support/auth-client.js';
import {
  AuthFixtures,
  DEFAULT_PROJECT_ID,
  organizationScope,
  projectScope,
  signIn,
} from '../support/auth-fixtures.js';
import { runCliAsync } from '../support/cli-process.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

interface WorkerView {
  id: string;
  pipelines: string[];
}

/**
 * Project X runs pipeline `orders` and holds a stopped `shared`; the default project holds a stopped
 * `shared` too (names are unique per project only). First with authentication on: the fleet listing
 * and health show a caller only its active project's pipelines. Then the same store under mode
 * `none`: project filtering is off, so X's running pipeline is seen, stopped and deleted.
 */
describe('project scope of operations, in mode enabled and then none', () => {
  let dbs: { store: string; source: string; sink: string };
  let dataDir: string;
  let service: TestService;
  let fixtures: AuthFixtures;
  let projectX: string;
  /** An organization admin, switched to project X. */
  let admin: ApiCaller;
  /** A viewer of the default project only. */
  let viewer: ApiCaller;

  const connections = () => [
    { name: 'src', type: 'postgres', dsn: dbs.source },
    { name: 'dst', type: 'postgres', dsn: dbs.sink },
  ];
  // Each writes a target of its own: two pipelines of one project may not write one table.
  const pipeline = (name: string) => ({
    name,
    source: { connection: 'src', tables: ['public.items'] },
    sink: { connection: 'dst', properties: { target_schema: `t_${name}` } },
  });

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster.adminUrl, 'scope_modes');
    await sqlOn(
      dbs.source,
      'CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items VALUES (1, $$a$$)',
    );
    const config = enableAuth(testConfig(dbs.store));
    dataDir = config.dataDir;
    service = await startTestService(config);
    fixtures = await AuthFixtures.open(dbs.store);
    projectX = await fixtures.project('project-x');
    const root = await fixtures.userWith('root@example.com', 'admin', organizationScope);
    const watcher = await fixtures.userWith(
      'watcher@example.com',
      'viewer',
      projectScope(DEFAULT_PROJECT_ID),
    );
    admin = await signIn(service.url, root);
    for (const project of ['default', 'project-x']) {
      expect((await admin.call('PUT', '/v1/auth/session', { project })).status).toBe(200);
      for (const body of connections()) {
        const res = await admin.call('POST', '/v1/connections', body);
        expect(res.status, res.text).toBe(201);
      }
      const shared = await admin.call('POST', '/v1/pipelines', pipeline('shared'));
      expect(shared.status, shared.text).toBe(201);
    }
    const orders = await admin.call('POST', '/v1/pipelines', pipeline('orders'));
    expect(orders.status, orders.text).toBe(201);
    expect((await admin.call('PUT', '/v1/pipelines/orders/state', { state: 'start' })).status).toBe(200);
    await waitFor(
      async () => (await admin.call('GET', '/v1/pipelines/orders')).body.state === 'running',
      'orders running',
    );
    viewer = await signIn(service.url, watcher);
  }, 120_000);
  afterAll(async () => {
    await fixtures?.close();
    await service?.stop();
  }, 120_000);

  describe('mode enabled', () => {
    it("lists workers with only the caller's active project's pipelines", async () => {
      const seen = async (caller: ApiCaller) => {
        const res = await caller.call<WorkerView[]>('GET', '/v1/workers');
        expect(res.status, res.text).toBe(200);
        return res.body.flatMap((w) => w.pipelines);
      };
      await waitFor(async () => (await seen(admin)).includes('orders'), 'the lease on orders listed');
      expect(await seen(admin)).toEqual(['orders']);
      // The same workers, with nothing of project X named.
      const res = await viewer.call<WorkerView[]>('GET', '/v1/workers');
      expect(res.body.map((w) => w.id)).toEqual(
        (await admin.call<WorkerView[]>('GET', '/v1/workers')).body.map((w) => w.id),
      );
      expect(await seen(viewer)).toEqual([]);
    });

    it("counts only the active project's running pipelines in health", async () => {
      expect((await admin.call('GET', '/v1/health')).body).toMatchObject({
        status: 'ok',
        pipelines_running: 1,
      });
      const other = await viewer.call('GET', '/v1/health');
      expect(other.status).toBe(200);
      expect(other.body).toMatchObject({ status: 'ok', workers: 1, pipelines_running: 0 });
    });

    it('refuses the project-selection header: the session or token chooses the project', async () => {
      const res = await viewer.call('GET', '/v1/pipelines', undefined, { 'replicator-project': 'project-x' });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('BAD_REQUEST');
    });
  });

  describe('mode none on the same store', () => {
    const request = (method: string, path: string, body?: unknown) => service.request(method, path, body);

    beforeAll(async () => {
      await service.stop();
      service = await startTestService(testConfig(dbs.store, dataDir));
      // The pipeline still wanted running is taken on by the new instance.
      await waitFor(
        async () =>
          (
            await fixtures.query(
              "SELECT 1 FROM pipelines p JOIN workers w ON w.id = p.owner_worker_id WHERE p.name = 'orders' AND p.state = 'running' AND w.stopped_at IS NULL",
            )
          ).rowCount === 1,
        'orders running under mode none',
      );
    }, 120_000);

    it("lists every project's pipelines and connections, each with its project", async () => {
      const pipelines = (await request('GET', '/v1/pipelines')).body as {
        name: string;
        project_id: string;
      }[];
      expect(pipelines.map((p) => [p.name, p.project_id === projectX ? 'x' : 'default']).sort()).toEqual([
        ['orders', 'x'],
        ['shared', 'default'],
        ['shared', 'x'],
      ]);
      const conns = (await request('GET', '/v1/connections')).body as { name: string; project_id: string }[];
      expect(conns).toHaveLength(4);
      expect(conns.filter((c) => c.project_id === projectX).map((c) => c.name)).toEqual(['dst', 'src']);
    });

    it("shows another project's pipeline in the fleet listing and in health", async () => {
      const workers = (await request('GET', '/v1/workers')).body as WorkerView[];
      expect(workers.flatMap((w) => w.pipelines)).toEqual(['orders']);
      expect((await request('GET', '/v1/health')).body).toMatchObject({ pipelines_running: 1 });
    });

    it('answers a name two projects hold with 409 NAME_AMBIGUOUS, naming them, until a project is chosen', async () => {
      const clash = await request('GET', '/v1/pipelines/shared');
      expect(clash.status).toBe(409);
      expect(clash.body.code).toBe('NAME_AMBIGUOUS');
      expect(clash.body.error).toContain('default');
      expect(clash.body.error).toContain('project-x');
      expect((await request('GET', '/v1/connections/src')).body.code).toBe('NAME_AMBIGUOUS');

      const chosen = await fetch(`${service.url}/v1/pipelines/shared`, {
        headers: { 'replicator-project': 'project-x' },
      });
      expect(chosen.status).toBe(200);
      expect(((await chosen.json()) as { project_id: string }).project_id).toBe(projectX);
      const byId = await fetch(`${service.url}/v1/pipelines`, {
        headers: { 'replicator-project': projectX },
      });
      expect(((await byId.json()) as { name: string }[]).map((p) => p.name)).toEqual(['orders', 'shared']);
      const unknown = await fetch(`${service.url}/v1/pipelines`, {
        headers: { 'replicator-project': 'nope' },
      });
      expect(unknown.status).toBe(404);

      // The command line chooses the same way.
      const cli = (...args: string[]) => runCliAsync([...args, '--url', service.url, '-o', 'json']);
      const clashed = await cli('get', 'pipeline', 'shared');
      expect(clashed.code).not.toBe(0);
      expect(clashed.stderr).toContain('NAME_AMBIGUOUS');
      const picked = await cli('get', 'pipeline', 'shared', '--project', 'project-x');
      expect(picked.code, picked.stderr).toBe(0);
      expect(JSON.parse(picked.stdout).project_id).toBe(projectX);
    });

    it("reads, stops and deletes another project's running pipeline by its name", async () => {
      const orders = await request('GET', '/v1/pipelines/orders');
      expect(orders.status).toBe(200);
      expect(orders.body.project_id).toBe(projectX);
      for (const path of ['metrics', 'progress', 'runs']) {
        expect((await request('GET', `/v1/pipelines/orders/${path}`)).status, path).toBe(200);
      }
      expect((await request('GET', '/v1/connections/dst')).status).toBe(409);

      const stop = await request('PUT', '/v1/pipelines/orders/state', { state: 'stop' });
      expect(stop.status, JSON.stringify(stop.body)).toBe(200);
      await waitFor(
        async () => (await request('GET', '/v1/pipelines/orders')).body.state === 'stopped',
        'orders stopped',
      );
      expect((await request('DELETE', '/v1/pipelines/orders')).status).toBe(204);
      expect((await request('GET', '/v1/pipelines/orders')).status).toBe(404);
      const left = await fixtures.query('SELECT 1 FROM pipelines WHERE name = $1', ['orders']);
      expect(left.rowCount).toBe(0);
    });

    it('creates in the default project', async () => {
      const made = await request('POST', '/v1/connections', {
        name: 'fresh',
        type: 'postgres',
        dsn: dbs.sink,
      });
      expect(made.status).toBe(201);
      expect(made.body.project_id).toBe(DEFAULT_PROJECT_ID);
    });
  });
});
