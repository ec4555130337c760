import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';

// Hard kills need the service in its own process; one PostgreSQL version is enough for them.
const [cluster] = inject('pgClusters');

// Each test starts the service's CLI (node with tsx) again after a kill: on a busy machine one start
// alone has taken 50 s, so the bound is one that only a hang reaches.
describe('replication across hard kills of the service', { timeout: 300_000 }, () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let port: number;
  let base: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-restart-'));
  const serve = () =>
    // A short lease: a killed instance's pipelines are taken back by the next one sooner.
    startCliServer(
      ['--database-url', dbs.store, '--data-dir', dataDir, '--lease-ttl', '3s', '--log-level', 'warn'],
      port,
    );
  const api = (method: string, path: string, body?: unknown) => jsonRequest(base, method, path, body);
  let server: Awaited<ReturnType<typeof serve>> | undefined;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'restart');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await sqlOn(
      dbs.source,
      `CREATE TABLE big (id bigint PRIMARY KEY, v text, n integer);
       INSERT INTO big SELECT i, md5(i::text), 0 FROM generate_series(1, 1200000) AS i;
       CREATE TABLE live (id serial PRIMARY KEY, v integer NOT NULL);
       ANALYZE;`,
    );
    server = await serve();
    await api('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await api('POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    const created = await api('POST', '/v1/pipelines', {
      name: 'restart',
      source: { connection: 'src', tables: ['public.big', 'public.live'] },
      sink: { connection: 'dst', properties: { batch_max_events: '200' } },
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    if (server) await stopChild(server.child, 'SIGKILL');
  });

  const converged = (table: string) => waitConverged(dbs.source, dbs.sink, table);

  it('resumes a snapshot killed midway at the first unfinished partition', async () => {
    expect((await api('PUT', '/v1/pipelines/restart/state', { state: 'start' })).status).toBe(200);
    const progress = await waitFor(async () => {
      const body = (await api('GET', '/v1/pipelines/restart/progress')).body;
      const big = body.tables.find((t: { table: string }) => t.table === 'public.big');
      return big && big.partitions_done >= 1 && big.partitions_done < big.partitions_total ? big : undefined;
    }, 'a partly copied table');
    expect(progress.partitions_total).toBeGreaterThan(2);
    // Writes during the snapshot must arrive too.
    await sqlOn(
      dbs.source,
      'UPDATE big SET n = n + 1 WHERE id % 1000 = 0; DELETE FROM big WHERE id % 5000 = 1',
    );
    const doneBefore = await sqlOn<{ partition_id: string; done_at: string }>(
      dbs.sink,
      "SELECT partition_id, done_at::text FROM _replicator.snapshot_partitions WHERE table_name = 'public.big'",
    );
    expect(doneBefore.length).toBeGreaterThan(0);
    await stopChild(server!.child, 'SIGKILL');

    server = await serve();
    await converged('big');
    const doneAfter = await sqlOn<{ partition_id: string; done_at: string }>(
      dbs.sink,
      "SELECT partition_id, done_at::text FROM _replicator.snapshot_partitions WHERE table_name = 'public.big'",
    );
    // Partitions finished before the kill were not copied again.
    for (const before of doneBefore) {
      expect(doneAfter.find((p) => p.partition_id === before.partition_id)?.done_at).toBe(before.done_at);
    }
    expect(doneAfter.length).toBe(progress.partitions_total);
    expect((await api('GET', '/v1/pipelines/restart')).body.state).toBe('running');
  });

  it('loses and duplicates nothing when killed mid-stream', async () => {
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await sqlOn(
          dbs.source,
          'INSERT INTO live (v) SELECT g FROM generate_series(1, 10) AS g; UPDATE live SET v = v + 1 WHERE id % 7 = 0',
        );
        written++;
      }
    })();
    await waitFor(
      async () =>
        (await sqlOn(dbs.sink, 'SELECT count(*)::int AS n FROM live').catch(() => [{ n: 0 }]))[0]?.n > 50,
      'rows in the sink',
    );
    await stopChild(server!.child, 'SIGKILL');
    // Changes go on while the service is down…
    const atKill = written;
    await waitFor(async () => written >= atKill + 3, 'writes while the service is down');
    server = await serve();
    // …and while the restarted one catches up, until it has replicated some made after its start.
    const newest = async (url: string) =>
      (await sqlOn<{ id: number | null }>(url, 'SELECT max(id)::int AS id FROM live').catch(() => []))[0]
        ?.id ?? 0;
    const atStart = await newest(dbs.source);
    await waitFor(async () => (await newest(dbs.sink)) >= atStart, 'writes after the restart in the sink');
    writing = false;
    await writer;
    expect(written).toBeGreaterThan(5);
    await converged('live');
    await converged('big');
    const runs = (await api('GET', '/v1/pipelines/restart/runs')).body.runs;
    expect(
      runs.filter((r: { outcome: string }) => r.outcome === 'interrupted').length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('restores the pipeline after a polite stop of the service as well', async () => {
    expect(await stopChild(server!.child, 'SIGTERM')).toBe(0);
    await sqlOn(dbs.source, 'INSERT INTO live (v) VALUES (-1)');
    server = await serve();
    await converged('live');
    const runs = (await api('GET', '/v1/pipelines/restart/runs')).body.runs;
    expect(runs.some((r: { outcome: string }) => r.outcome === 'shutdown')).toBe(true);
  });
});
