import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';

// Several service processes on one metadata database; one PostgreSQL version is enough.
const [cluster] = inject('pgClusters');

describe('a fleet of three instances on one metadata database', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const instances: { base: string; child: Awaited<ReturnType<typeof startCliServer>>['child'] }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'replicator-fleet-'));
  const keyFile = join(dir, 'master.key');
  const api = (i: number, method: string, path: string, body?: unknown) =>
    jsonRequest(instances[i]?.base as string, method, path, body);
  const pipelineOn = async (i: number, name: string) => (await api(i, 'GET', `/v1/pipelines/${name}`)).body;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'fleet');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    for (const t of ['f1', 'f2', 'f3']) {
      await sqlOn(
        dbs.source,
        `CREATE TABLE ${t} (id serial PRIMARY KEY, v integer); INSERT INTO ${t} (v) SELECT g FROM generate_series(1, 100) g`,
      );
    }
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const server = await startCliServer(
        [
          '--database-url',
          dbs.store,
          '--data-dir',
          join(dir, `i${i}`),
          '--auth-master-key-file',
          keyFile,
          '--lease-ttl',
          '3s',
          '--log-level',
          'warn',
        ],
        port,
      );
      instances.push({ base: `http://127.0.0.1:${port}`, child: server.child });
    }
    await api(0, 'POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await api(1, 'POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    for (const [i, t] of ['f1', 'f2', 'f3'].entries()) {
      await api(i, 'POST', '/v1/pipelines', {
        name: t,
        source: { connection: 'src', tables: [`public.${t}`] },
        sink: { connection: 'dst' },
      });
      // Each instance starts one: a pipeline runs where it was started.
      expect((await api(i, 'PUT', `/v1/pipelines/${t}/state`, { state: 'start' })).status).toBe(200);
    }
  });
  afterAll(async () => {
    for (const instance of instances) await stopChild(instance.child, 'SIGKILL');
  });

  it('spreads the pipelines, one per worker, each seen from every instance', async () => {
    for (const t of ['f1', 'f2', 'f3']) await waitConverged(dbs.source, dbs.sink, t);
    const workers = (await api(2, 'GET', '/v1/workers')).body;
    expect(workers).toHaveLength(3);
    expect(workers.every((w: { status: string }) => w.status === 'live')).toBe(true);
    expect(workers.map((w: { pipelines: string[] }) => w.pipelines.length).sort()).toEqual([1, 1, 1]);
    expect((await api(1, 'GET', '/v1/health')).body).toMatchObject({
      status: 'ok',
      workers: 3,
      pipelines_running: 3,
    });
  });

  it('carries out a state change asked of an instance that does not run the pipeline', async () => {
    expect((await api(0, 'PUT', '/v1/pipelines/f2/state', { state: 'pause' })).status).toBe(200);
    await waitFor(async () => (await pipelineOn(0, 'f2')).state === 'paused', 'f2 paused by its owner');
    await sqlOn(dbs.source, 'INSERT INTO f2 (v) VALUES (-1)');
    expect((await api(2, 'PUT', '/v1/pipelines/f2/state', { state: 'resume' })).status).toBe(200);
    await waitFor(async () => (await pipelineOn(1, 'f2')).state === 'running', 'f2 resumed');
    await waitConverged(dbs.source, dbs.sink, 'f2');
  });

  it('moves the pipelines of a killed worker to a live one, losing and duplicating nothing', async () => {
    const owner = (await api(1, 'GET', '/v1/workers')).body.find((w: { pipelines: string[] }) =>
      w.pipelines.includes('f1'),
    );
    const victim = instances.findIndex((_, i) => i === 0);
    expect(owner).toBeDefined();
    let writing = true;
    const writer = (async () => {
      while (writing)
        await sqlOn(
          dbs.source,
          'INSERT INTO f1 (v) SELECT g FROM generate_series(1, 5) g; UPDATE f1 SET v = v + 1 WHERE id % 10 = 0',
        );
    })();
    await new Promise((r) => setTimeout(r, 500));
    await stopChild(instances[victim]?.child as never, 'SIGKILL');
    const survivor = victim === 0 ? 1 : 0;
    const taken = await waitFor(
      async () => {
        const workers = (await api(survivor, 'GET', '/v1/workers')).body;
        const holder = workers.find((w: { pipelines: string[]; status: string }) =>
          w.pipelines.includes('f1'),
        );
        return holder && holder.id !== owner.id && holder.status === 'live' ? workers : undefined;
      },
      'another worker to take f1',
      30_000,
    );
    expect(taken.find((w: { id: string }) => w.id === owner.id).status).toBe('stale');
    await new Promise((r) => setTimeout(r, 500));
    writing = false;
    await writer;
    await waitConverged(dbs.source, dbs.sink, 'f1');
    expect((await pipelineOn(survivor, 'f1')).state).toBe('running');
    expect((await api(survivor, 'GET', '/v1/health')).body.workers).toBe(2);
  });

  it('fences a paused worker: once another took its pipeline, its writes are refused', async () => {
    const workers = (await api(1, 'GET', '/v1/workers')).body;
    const owner = workers.find((w: { pipelines: string[] }) => w.pipelines.includes('f3'));
    const index = instances.findIndex((_, i) => i !== 0 && owner && instances[i]?.child.pid === owner.pid);
    expect(index).toBeGreaterThan(0);
    const zombie = instances[index]?.child;
    const other = index === 1 ? 2 : 1;
    zombie?.kill('SIGSTOP');
    try {
      await sqlOn(dbs.source, 'INSERT INTO f3 (v) SELECT g FROM generate_series(1, 20) g');
      await waitFor(
        async () => {
          const list = (await api(other, 'GET', '/v1/workers')).body;
          return list.find(
            (w: { id: string; pipelines: string[] }) => w.id !== owner.id && w.pipelines.includes('f3'),
          );
        },
        'a live worker to take f3',
        30_000,
      );
      await waitConverged(dbs.source, dbs.sink, 'f3');
    } finally {
      zombie?.kill('SIGCONT');
    }
    // The woken worker finds its lease gone and lets go; the new owner's records stand.
    await sqlOn(dbs.source, 'INSERT INTO f3 (v) VALUES (-3)');
    await new Promise((r) => setTimeout(r, 2_000));
    await waitConverged(dbs.source, dbs.sink, 'f3');
    expect((await pipelineOn(other, 'f3')).state).toBe('running');
    const after = (await api(other, 'GET', '/v1/workers')).body.find(
      (w: { id: string }) => w.id === owner.id,
    );
    expect(after.pipelines).not.toContain('f3');
    const epoch = await sqlOn(dbs.sink, 'SELECT epoch::int AS epoch FROM _replicator.checkpoints');
    expect(epoch.length).toBeGreaterThan(0);
  });
});
