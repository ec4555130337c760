import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** A verification reads only: a hard kill of the service during one leaves nothing to clean up. */
describe('a verification across a hard kill of the service', { timeout: 240_000 }, () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let port: number;
  let base: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-verify-kill-'));
  const serve = () =>
    startCliServer(
      ['--database-url', dbs.store, '--data-dir', dataDir, '--lease-ttl', '3s', '--log-level', 'warn'],
      port,
    );
  const api = (method: string, path: string, body?: unknown) => jsonRequest(base, method, path, body);
  let server: Awaited<ReturnType<typeof serve>> | undefined;

  const verification = (id: string) => api('GET', `/v1/pipelines/kill/verifications/${id}`);

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'verifykill');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await sqlOn(
      dbs.source,
      `CREATE TABLE big (id bigint PRIMARY KEY, v text);
       INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 300000) AS i; ANALYZE;`,
    );
    server = await serve();
    await api('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await api('POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    await api('POST', '/v1/pipelines', {
      name: 'kill',
      source: { connection: 'src', tables: ['public.big'] },
      sink: { connection: 'dst' },
    });
    await api('PUT', '/v1/pipelines/kill/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'big');
  });

  afterAll(async () => {
    if (server) await stopChild(server.child, 'SIGKILL');
  });

  it('is marked interrupted after a restart, and a new one runs and matches', async () => {
    // Throttled hard, so that it is still reading when the process is killed.
    const started = await api('POST', '/v1/pipelines/kill/verify', { source_share: 0.02 });
    expect(started.status).toBe(202);
    await waitFor(
      async () => (await verification(started.body.id)).body.status === 'running',
      'the verification to run',
    );
    await stopChild(server?.child as never, 'SIGKILL');
    await sqlOn(dbs.source, `UPDATE big SET v = 'after the kill' WHERE id <= 10`);
    server = await serve();
    const interrupted = await waitFor(async () => {
      const { body } = await verification(started.body.id);
      return body.status === 'failed' ? body : undefined;
    }, 'the killed verification to be marked failed');
    expect(interrupted.error).toMatch(/interrupted/);
    await waitConverged(dbs.source, dbs.sink, 'big');

    const again = (await waitFor(async () => {
      const res = await api('POST', '/v1/pipelines/kill/verify', {});
      return res.status === 202 ? res : undefined;
    }, 'a new verification to be accepted')) as { body: { id: string } };
    const done = await waitFor(async () => {
      const { body } = await verification(again.body.id);
      return ['completed', 'failed'].includes(body.status) ? body : undefined;
    }, 'the new verification to end');
    expect(done).toMatchObject({ status: 'completed', result: 'matched' });
  });

  it('copies again at the next start a table whose repair a kill cut short', async () => {
    const copiedAt = async () =>
      (
        await sqlOn(
          dbs.store,
          `SELECT snapshot_done_at::text AS at FROM pipeline_tables WHERE table_name = 'public.big'`,
        )
      )[0].at as string;
    const before = await copiedAt();
    await stopChild(server?.child as never, 'SIGKILL');
    // What a repair holding the table's changes leaves when the process dies.
    await sqlOn(dbs.store, `UPDATE pipeline_tables SET repairing = true WHERE table_name = 'public.big'`);
    await sqlOn(dbs.sink, `UPDATE big SET v = 'lost with the held changes' WHERE id = 5`);
    server = await serve();
    await waitFor(async () => {
      const at = await copiedAt();
      return at !== null && at !== before;
    }, 'the table to be copied again');
    await waitConverged(dbs.source, dbs.sink, 'big');
  });
});
