import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { jsonRequest, startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

// Rows of 128 characters: 100,000 of them are some 16 MB of pgoutput, more than a spool keeps in
// memory (8 MiB), so the transaction goes to a spool file.
const ROWS = 100_000;
const BIG_TRANSACTION = `INSERT INTO big SELECT i, repeat(md5(i::text), 4) FROM generate_series(1, ${ROWS}) AS i`;
const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';

async function sourceWithStreaming(prefix: string) {
  const dbs = await replicationDatabases(cluster?.adminUrl as string, prefix);
  const dbName = new URL(dbs.source).pathname.slice(1);
  // The walsenders of this database stream transactions over 64 kB before their commit.
  await sqlOn(
    dbs.source,
    `ALTER DATABASE ${dbName} SET logical_decoding_work_mem = '64kB';
     CREATE TABLE big (id bigint PRIMARY KEY, v text NOT NULL)`,
  );
  return dbs;
}

const sinkRows = async (sink: string) =>
  Number((await sqlOn(sink, 'SELECT count(*) AS n FROM big').catch(() => [{ n: -1 }]))[0]?.n);

describe('a large transaction across a crash of the service', () => {
  let dbs: Awaited<ReturnType<typeof sourceWithStreaming>>;
  let port: number;
  let base: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-crash-'));
  const api = (method: string, path: string, body?: unknown) => jsonRequest(base, method, path, body);
  const serve = () =>
    startCliServer(
      ['--database-url', dbs.store, '--data-dir', dataDir, '--lease-ttl', '3s', '--log-level', 'info'],
      port,
    );
  let server: Awaited<ReturnType<typeof serve>> | undefined;

  beforeAll(async () => {
    dbs = await sourceWithStreaming('crash_replay');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = await serve();
    await createSourceAndSink(api, dbs);
    const created = await api('POST', '/v1/pipelines', {
      name: 'crash',
      source: { connection: 'src', tables: ['public.big'] },
      sink: { connection: 'dst', properties: { batch_max_events: '200' } },
    });
    expect(created.status).toBe(201);
    expect((await api('PUT', '/v1/pipelines/crash/state', { state: 'start' })).status).toBe(200);
    await waitFor(
      async () => (await api('GET', '/v1/pipelines/crash/progress')).body.tables?.[0]?.status === 'streaming',
      'the pipeline streaming',
    );
  });
  afterAll(async () => {
    if (server) await stopChild(server.child, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('counts each change once, shows the lag all along the replay, and removes the spool the killed process left', async () => {
    await sqlOn(dbs.source, 'INSERT INTO big VALUES (0, $1)', ['before']);
    await waitFor(async () => (await sinkRows(dbs.sink)) === 1, 'the first row');
    // Its count stored too (about a second after its batch): the kill below is to fall inside the
    // large transaction, not between a batch and the store's record of its count.
    await waitFor(
      async () =>
        Number(
          (await sqlOn(dbs.store, "SELECT events_total FROM pipelines WHERE name = 'crash'"))[0]
            ?.events_total,
        ) === 1,
      'the first row counted in the store',
    );
    await sqlOn(dbs.source, BIG_TRANSACTION);
    // Its commit is no later than this: the lag from it is at least the time since.
    const committedAt = Date.now();
    const killed = server!.child.pid as number;
    const spoolOf = (pid: number) =>
      readdirSync(join(dataDir, 'spool')).filter((name) => name.startsWith(`${host}_${pid}_`));
    // Killed while the sink holds part of it in a transaction not committed yet, and its spool
    // (which keeps it for a replay) went to disk.
    await waitFor(async () => {
      const [spool] = spoolOf(killed);
      if (!spool || readdirSync(join(dataDir, 'spool', spool)).length === 0) return false;
      const held = await sqlOn<{ n: number }>(
        dbs.sink,
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = 'replicator-sink-streamed' AND backend_xid IS NOT NULL`,
      );
      return (held[0]?.n ?? 0) > 0;
    }, 'a first piece in the sink');
    const applied = await sinkRows(dbs.sink);
    expect(spoolOf(killed)).toHaveLength(1);
    await stopChild(server!.child, 'SIGKILL');
    expect(applied).toBeLessThan(ROWS + 1);
    const leftBehind = join(dataDir, 'spool', spoolOf(killed)[0] as string);
    expect(readdirSync(leftBehind).length).toBeGreaterThan(0);

    server = await serve();
    expect(existsSync(leftBehind)).toBe(false);
    expect(server.output()).toMatch(
      /removed the spool files of processes that are gone \(\d+\.\d MiB freed\)/,
    );

    // Until the transaction is whole in the sink, the lag counts from its commit.
    const samples: { at: number; lagMs: number; rows: number }[] = [];
    await waitFor(
      async () => {
        // The lag first: once it reads 0, the rows read after it are all there.
        const metrics = (await api('GET', '/v1/pipelines/crash/metrics')).body;
        const rows = await sinkRows(dbs.sink);
        if (rows === ROWS + 1 && metrics.replication_lag_seconds === 0) return true;
        // Once the transaction is whole, the lag counts only other WAL of the shared server.
        if (rows < ROWS + 1)
          samples.push({ at: Date.now(), lagMs: metrics.replication_lag_seconds * 1000, rows });
        return false;
      },
      'the transaction applied whole',
      180_000,
    );
    // Received again from its start after the restart, the transaction counts from its first
    // message until its commit is known, then from its commit time; it never reads 0 meanwhile.
    const seen = samples.slice(samples.findIndex((s) => s.lagMs > 0));
    const shown = JSON.stringify(seen.map((s) => [s.at - committedAt, s.lagMs, s.rows]));
    expect(seen.length, shown).toBeGreaterThan(0);
    expect(
      seen.every((s) => s.lagMs > 0),
      shown,
    ).toBe(true);
    const fromCommit = seen.findIndex((s) => s.lagMs >= s.at - committedAt - 500);
    expect(fromCommit, shown).toBeGreaterThanOrEqual(0);
    expect(
      seen.slice(fromCommit).every((s) => s.lagMs >= s.at - committedAt - 500),
      shown,
    ).toBe(true);
    console.info(`lag after the restart (ms since the commit, lag ms, sink rows): ${shown}`);
    await waitConverged(dbs.source, dbs.sink, 'big');
    await waitFor(
      async () => (await api('GET', '/v1/pipelines/crash/metrics')).body.events_total === ROWS + 1,
      `events_total equal to the ${ROWS + 1} changes of the source`,
    );
    // Still exact once the counts are saved and read back by a new process.
    expect(await stopChild(server.child, 'SIGTERM')).toBe(0);
    server = await serve();
    expect((await api('GET', '/v1/pipelines/crash/metrics')).body.events_total).toBe(ROWS + 1);
  }, 300_000);
});

describe('a large transaction with its spool directory full', () => {
  let dbs: Awaited<ReturnType<typeof sourceWithStreaming>>;
  let service: TestService | undefined;
  const spoolDir = mkdtempSync(join(tmpdir(), 'replicator-full-spool-'));
  let mounted = false;

  beforeAll(async () => {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', spoolDir], { stdio: 'pipe' });
      mounted = true;
    } catch {
      return;
    }
    dbs = await sourceWithStreaming('full_spool');
  });
  afterAll(async () => {
    await service?.stop();
    if (mounted) execFileSync('umount', [spoolDir]);
    rmSync(spoolDir, { recursive: true, force: true });
  });

  it('names the full directory, retries, and applies the transaction whole once there is room', async (ctx) => {
    if (!mounted) ctx.skip('mounting a 4 MiB tmpfs needs root (mount -t tmpfs was refused)');
    service = await startTestService({ ...testConfig(dbs.store), spoolDir });
    await createSourceAndSink(service.request, dbs);
    await service.request('POST', '/v1/pipelines', {
      name: 'full',
      source: { connection: 'src', tables: ['public.big'] },
      sink: { connection: 'dst', properties: { batch_max_events: '5000' } },
    });
    await service.request('PUT', '/v1/pipelines/full/state', { state: 'start' });
    await waitFor(
      async () =>
        (await service!.request('GET', '/v1/pipelines/full/progress')).body.tables?.[0]?.status ===
        'streaming',
      'the pipeline streaming',
    );
    await sqlOn(dbs.source, BIG_TRANSACTION);
    const failed = await waitFor(async () => {
      const { body } = await service!.request('GET', '/v1/pipelines/full');
      return typeof body.error === 'string' && body.error.includes('ENOSPC') ? body : undefined;
    }, 'the full spool directory reported');
    expect(failed.error).toMatch(
      new RegExp(
        `^spool directory ${spoolDir}/[^ ]+ is full \\(ENOSPC\\) writing a transaction of \\d+ changes: free space or set spool_dir$`,
      ),
    );
    // Retried, not failed: the pipeline waits for room.
    expect(failed.state).toBe('running');
    expect(await sinkRows(dbs.sink)).toBe(0);

    execFileSync('mount', ['-o', 'remount,size=64m', spoolDir]);
    await waitConverged(dbs.source, dbs.sink, 'big', 'id', 180_000);
    await waitFor(
      async () => (await service!.request('GET', '/v1/pipelines/full/metrics')).body.events_total === ROWS,
      `events_total equal to the ${ROWS} changes of the source`,
    );
    const { body } = await service.request('GET', '/v1/pipelines/full');
    expect(body.state).toBe('running');
  }, 300_000);
});
