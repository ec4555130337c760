import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';

const [cluster] = inject('pgClusters');

const TABLES = ['k1', 'k2', 'k3', 'k4'];

/**
 * A shared stream killed while it fans out under load: the service is killed with SIGKILL while
 * four pipelines of one source stream a steady write load, started again on the same data
 * directory. Each sink converges to its source table, and the four still read one slot through
 * one walsender.
 */
describe('kill -9 of a shared stream during fan-out', { timeout: 300_000 }, () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let port: number;
  let base: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'replicator-shared-kill-'));
  const serve = () =>
    startCliServer(
      ['--database-url', dbs.store, '--data-dir', dataDir, '--lease-ttl', '3s', '--log-level', 'warn'],
      port,
    );
  const api = (method: string, path: string, body?: unknown) => jsonRequest(base, method, path, body);
  let server: Awaited<ReturnType<typeof serve>> | undefined;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'shared_kill');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await sqlOn(
      dbs.source,
      TABLES.map(
        (t) =>
          `CREATE TABLE ${t} (id serial PRIMARY KEY, v integer NOT NULL); INSERT INTO ${t} (v) SELECT g FROM generate_series(1, 1000) g;`,
      ).join('\n'),
    );
    server = await serve();
    await api('POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await api('POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    for (const t of TABLES) {
      const created = await api('POST', '/v1/pipelines', {
        name: t,
        source: { connection: 'src', tables: [`public.${t}`], slot: 'shared' },
        sink: { connection: 'dst', properties: { batch_max_events: '50' } },
      });
      expect(created.status).toBe(201);
      expect((await api('PUT', `/v1/pipelines/${t}/state`, { state: 'start' })).status).toBe(200);
    }
  });
  afterAll(async () => {
    if (server) await stopChild(server.child, 'SIGKILL');
  });

  it('converges after kills in the middle of the fan-out', async () => {
    for (const t of TABLES) await waitConverged(dbs.source, dbs.sink, t);
    // A steady load: each transaction inserts into one table and updates a row of another.
    const writer = new pg.Client({ connectionString: dbs.source });
    await writer.connect();
    let stop = false;
    let committed = 0;
    const load = (async () => {
      while (!stop) {
        const a = TABLES[committed % TABLES.length] as string;
        const b = TABLES[(committed + 1) % TABLES.length] as string;
        await writer.query(
          `BEGIN; INSERT INTO ${a} (v) VALUES (${committed}); UPDATE ${b} SET v = v + 1 WHERE id = ${(committed % 1000) + 1}; COMMIT`,
        );
        committed++;
      }
    })();
    try {
      for (let round = 0; round < 3; round++) {
        const before = committed;
        // Applied while the load runs: the kill comes in the middle of the fan-out.
        await waitFor(async () => {
          const [row] = await sqlOn<{ n: string }>(
            dbs.sink,
            'SELECT count(*) AS n FROM _replicator.checkpoints',
          );
          return committed > before + 100 && Number(row?.n) === TABLES.length;
        }, 'the load to run and every pipeline to checkpoint');
        await stopChild(server!.child, 'SIGKILL');
        server = await serve();
      }
    } finally {
      stop = true;
      await load;
      await writer.end();
    }
    for (const t of TABLES) await waitConverged(dbs.source, dbs.sink, t);
    // One slot and one walsender for the four, after every restart.
    const slots = await sqlOn<{ slot_name: string; active: boolean }>(
      dbs.source,
      'SELECT slot_name, active FROM pg_replication_slots WHERE database = current_database()',
    );
    expect(slots).toHaveLength(1);
    expect(slots[0]?.slot_name).toMatch(/^replicator_s_/);
    await waitFor(
      async () =>
        (
          await sqlOn<{ n: string }>(
            dbs.source,
            "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()",
          )
        )[0]?.n === '1',
      'one walsender',
    );
  });
});
