import { randomUUID } from 'node:crypto';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** Each row as text, formatted alike on both sides, in key order. */
const SOURCE_ROWS = `SELECT id::text AS id, qty::text AS qty, price::text AS price, note, big::text AS big,
  to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS at, encode(data, 'hex') AS data, doc::text AS doc
  FROM orders ORDER BY id`;
const SINK_ROWS = `SELECT CAST(id AS VARCHAR) AS id, CAST(qty AS VARCHAR) AS qty, CAST(price AS VARCHAR) AS price, note,
  CAST(big AS VARCHAR) AS big, strftime(timezone('UTC', "at"), '%Y-%m-%d %H:%M:%S.%f') AS "at", lower(hex(data)) AS data,
  CAST(doc AS VARCHAR) AS doc FROM "public"."orders" ORDER BY id`;

describe('PostgreSQL to a DuckDB file, through the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let dataDir: string;
  const file = `e2e-${randomUUID().slice(0, 8)}.duckdb`;
  let path: string;

  const sinkRows = async () => {
    const instance = await acquireInstance(path);
    const conn = await instance.connect();
    try {
      return (await conn.runAndReadAll(SINK_ROWS)).getRowObjectsJS();
    } finally {
      conn.closeSync();
      await releaseInstance(path);
    }
  };
  const sourceRows = () => sqlOn(dbs.source, SOURCE_ROWS);
  const converged = async (): Promise<Record<string, string | null>[]> =>
    (await waitFor(async () => {
      // The file may be briefly unreadable while the sink opens it: compare again then.
      const [a, b] = await Promise.all([sourceRows(), sinkRows().catch(() => undefined)]);
      return JSON.stringify(a) === JSON.stringify(b) ? a : undefined;
    }, 'the duckdb table to equal the source')) as Record<string, string | null>[];

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'duckdb_e2e');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2), note text, big bigint,
         at timestamptz, data bytea, doc jsonb);
       INSERT INTO orders SELECT g, g, g * 1.5, 'n' || g, 9007199254740993 + g, '2024-05-01 12:00:00.123456+02',
         '\\x00ff'::bytea, jsonb_build_object('n', g) FROM generate_series(1, 50) g;`,
    );
    dataDir = await mkdtemp(join(tmpdir(), 'duckdb-e2e-'));
    const config = testConfig(dbs.store, dataDir);
    service = await startTestService(config);
    path = join(await realpath(dataDir), 'duckdb', file);
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-duckdb/state', { state: 'stop' });
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses a DSN outside the allowed places, naming the part', async () => {
    for (const dsn of ['duckdb:../master.duckdb', 'duckdb:///etc/x.duckdb', 'duckdb::memory:']) {
      const refused = await service.request('POST', '/v1/connections', { name: 'bad', type: 'duckdb', dsn });
      expect(refused.status).toBe(422);
      expect(refused.body.error?.code ?? refused.body.code).toBe('INVALID_DSN');
      expect(JSON.stringify(refused.body)).not.toContain('master');
    }
  });

  it('snapshots the table, then applies every change, the file equal to the source row by row', async () => {
    for (const [name, type, dsn] of [
      ['wh', 'duckdb', `duckdb:${file}`],
      ['src', 'postgres', dbs.source],
    ] as const) {
      const created = await service.request('POST', '/v1/connections', { name, type, dsn });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-duckdb',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'wh', properties: { batch_max_events: '4' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-duckdb/state', { state: 'start' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(
      async () =>
        (await service.request('GET', '/v1/pipelines/to-duckdb/progress')).body.phase === 'streaming',
      'streaming',
    );
    expect(await converged()).toHaveLength(50);

    // A value large enough to be TOASTed, then an update that leaves it out of the stream.
    await sqlOn(
      dbs.source,
      `UPDATE orders SET note = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g) WHERE id = 5`,
    );
    await sqlOn(dbs.source, 'UPDATE orders SET qty = -5 WHERE id = 5');
    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty) SELECT g, g FROM generate_series(51, 60) g');
    await sqlOn(
      dbs.source,
      'BEGIN; UPDATE orders SET id = 200 WHERE id = 2; DELETE FROM orders WHERE id = 3; COMMIT',
    );
    await sqlOn(
      dbs.source,
      'BEGIN; DELETE FROM orders WHERE id = 4; INSERT INTO orders (id, qty) VALUES (4, 44); COMMIT',
    );
    const rows = await converged();
    expect(rows).toHaveLength(59);
    expect(rows.find((r) => r.id === '5')?.note).toHaveLength(12_800);

    await sqlOn(dbs.source, 'TRUNCATE orders');
    await sqlOn(dbs.source, "INSERT INTO orders (id, qty, note) VALUES (1, 1, 'again')");
    expect(await converged()).toEqual([expect.objectContaining({ id: '1', qty: '1', note: 'again' })]);
  }, 180_000);

  it('loses and doubles nothing when the pipeline is stopped and started while changes flow', async () => {
    let written = 0;
    const writes = (async () => {
      for (let i = 0; i < 20; i++, written++) {
        await sqlOn(
          dbs.source,
          `BEGIN; INSERT INTO orders (id, qty) SELECT g, ${i} FROM generate_series(${1000 + i * 10}, ${1009 + i * 10}) g;
           UPDATE orders SET qty = qty + 1 WHERE id = 1; DELETE FROM orders WHERE id = ${1000 + i * 10}; COMMIT`,
        );
      }
    })();
    for (const [move, state] of ['stop', 'start', 'stop', 'start'].entries()) {
      // Each move comes while changes flow: after a few more of the 20 transactions (or all of them).
      await waitFor(async () => written >= Math.min(20, (move + 1) * 4), `transaction ${(move + 1) * 4}`);
      // A pipeline still starting or stopping refuses the next move for now (409): asked again.
      await waitFor(
        async () => (await service.request('PUT', '/v1/pipelines/to-duckdb/state', { state })).status === 200,
        `the pipeline to ${state}`,
      );
    }
    await writes;
    const rows = await converged();
    expect(rows).toHaveLength(1 + 20 * 9);
    expect(rows[0]).toMatchObject({ id: '1', qty: '21' });
  }, 180_000);
});
