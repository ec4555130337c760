import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const SCHEMA = `
  CREATE SCHEMA app;
  CREATE TABLE public.orders (
    id bigserial PRIMARY KEY, amount numeric(12,2), placed_at timestamptz, meta jsonb, tags text[],
    blob bytea, note text, qty integer NOT NULL DEFAULT 0, active boolean, day date);
  ALTER TABLE public.orders ALTER COLUMN note SET STORAGE EXTERNAL;
  CREATE TABLE app.events (tenant integer, seq bigint, payload jsonb, PRIMARY KEY (tenant, seq));
`;

const SEED = `
  INSERT INTO public.orders (amount, placed_at, meta, tags, blob, note, qty, active, day)
    SELECT (i * 1.25)::numeric(12,2), '2024-01-01 00:00:00+02'::timestamptz + i * interval '1 minute 1.5 second',
      jsonb_build_object('i', i, 'nested', jsonb_build_array(i, 'x')), ARRAY['a' || i, NULL, 'quote"d'],
      decode(md5(i::text), 'hex'),
      CASE WHEN i % 100 = 0 THEN repeat(md5(i::text), 200) WHEN i % 7 = 0 THEN NULL
        ELSE E'tab\\there\\nnewline \\\\ back ''q'' 𝄞' END,
      i, i % 2 = 0, DATE '2020-01-01' + i
    FROM generate_series(1, 3000) AS i;
  INSERT INTO app.events SELECT i % 10, i, jsonb_build_object('k', i) FROM generate_series(1, 500) AS i;
`;

const ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

/** The source's rows in the form the sink's must have: UTC times, hex bytes, parsed JSON, 1/0 booleans. */
async function sourceRows(url: string) {
  const orders = await sqlOn(
    url,
    `SELECT id::text, amount::text, to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS placed_at,
            meta::text, tags::text, encode(blob, 'hex') AS blob, note, qty, active::int AS active, day::text
       FROM public.orders ORDER BY id`,
  );
  const events = await sqlOn(
    url,
    'SELECT tenant, seq::text, payload::text FROM app.events ORDER BY tenant, seq',
  );
  return normalise(orders, events);
}

async function sinkRows(db: Connection, database: string) {
  const query = async (sql: string) => (await db.query<RowDataPacket[]>(sql))[0];
  const orders = await query(
    `SELECT CAST(id AS CHAR) AS id, CAST(amount AS CHAR) AS amount,
            DATE_FORMAT(placed_at, '%Y-%m-%d %H:%i:%s.%f') AS placed_at, meta, tags, LOWER(HEX(\`blob\`)) AS \`blob\`,
            note, qty, active, CAST(day AS CHAR) AS day
       FROM \`${database}\`.orders ORDER BY id`,
  );
  const events = await query(
    `SELECT tenant, CAST(seq AS CHAR) AS seq, payload FROM \`${database}\`.events ORDER BY tenant, seq`,
  );
  return normalise(orders, events);
}

const parsed = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);

type Rows = Record<string, unknown>[];

function normalise(orders: Rows, events: Rows): { orders: Rows; events: Rows } {
  return {
    orders: orders.map((r) => ({ ...r, meta: parsed(r.meta), blob: r.blob ?? null })),
    events: events.map((r) => ({ ...r, payload: parsed(r.payload) })),
  };
}

describe.each(inject('pgClusters'))('replication into MariaDB on $label', (cluster) => {
  const database = `e2e_${randomBytes(6).toString('hex')}`;
  let service: TestService;
  let source: string;
  let admin: Connection;

  const converged = async (what: string) => {
    const expected = await sourceRows(source);
    await waitFor(
      // Deep equality that ignores the order of JSON keys, which MySQL (not MariaDB) stores in its own.
      async () => isDeepStrictEqual(await sinkRows(admin, database).catch(() => null), expected),
      what,
      90_000,
    );
    return expected;
  };

  beforeAll(async () => {
    admin = await mysql.createConnection({
      ...ADMIN,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    await admin.query(`CREATE DATABASE \`${database}\``);
    const store = await createDatabase(cluster.adminUrl, 'mysql_e2e_store');
    source = await createDatabase(cluster.adminUrl, 'mysql_e2e_src');
    await sqlOn(source, SCHEMA);
    await sqlOn(source, SEED);
    service = await startTestService(testConfig(store));
    const src = await service.request('POST', '/v1/connections', {
      name: 'src',
      type: 'postgres',
      dsn: source,
    });
    expect(src.status).toBe(201);
  });
  afterAll(async () => {
    await service?.stop();
    await admin?.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin?.end();
  });

  it('refuses a mysql DSN outside the allow-list, naming the parameter', async () => {
    const refused = await service.request('POST', '/v1/connections', {
      name: 'bad',
      type: 'mysql',
      dsn: `mysql://root:hunter2-secret@127.0.0.1:3306/${database}?socketPath=/var/run/mysqld/mysqld.sock`,
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('INVALID_DSN');
    expect(JSON.stringify(refused.body)).toContain("parameter 'socketPath'");
    expect(JSON.stringify(refused.body)).not.toContain('hunter2');
  });

  it('says it was the sink that refused the login, without its password', async () => {
    const made = await service.request('POST', '/v1/connections', {
      name: 'wrong-password',
      type: 'mysql',
      dsn: `mysql://root:hunter2-secret@127.0.0.1:3306/${database}`,
    });
    expect(made.status).toBe(201);
    const refused = await service.request('POST', '/v1/pipelines', {
      name: 'refused',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'wrong-password' },
    });
    expect(refused).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(refused.body.error).toMatch(
      /^sink\.connection: the sink refused: sink connection 'wrong-password': Access denied for user 'root'/,
    );
    expect(JSON.stringify(refused.body)).not.toContain('hunter2');
    expect((await service.request('DELETE', '/v1/connections/wrong-password')).status).toBe(204);
  });

  it('snapshots, then streams inserts, updates, deletes and truncates into MariaDB', async () => {
    const dst = await service.request('POST', '/v1/connections', {
      name: 'dst',
      type: 'mysql',
      dsn: `mysql://root@127.0.0.1:3306/${database}`,
    });
    expect(dst.status).toBe(201);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-mysql',
      source: { connection: 'src', tables: ['public.orders', 'app.events'] },
      sink: { connection: 'dst', properties: { batch_max_events: '200' } },
    });
    expect(created.status).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-mysql/state', { state: 'start' });
    expect(started.status).toBe(200);
    await waitFor(
      async () =>
        (await service.request('GET', '/v1/pipelines/to-mysql/progress')).body.phase === 'streaming',
      'streaming',
    );
    const snapshot = await converged('the snapshot');
    expect(snapshot.orders).toHaveLength(3000);
    expect(snapshot.events).toHaveLength(500);

    await sqlOn(
      source,
      `BEGIN;
       INSERT INTO public.orders (amount, placed_at, note, qty, active) SELECT 9.99, now(), 'new ' || i, i, true
         FROM generate_series(1, 250) AS i;
       UPDATE public.orders SET amount = amount + 1, meta = meta || '{"u": 1}' WHERE id % 13 = 0;
       DELETE FROM public.orders WHERE id % 17 = 0;
       UPDATE public.orders SET id = id + 100000 WHERE id IN (1, 2, 3);
       COMMIT;`,
    );
    // The long (TOASTed) notes are not sent with these updates: the sink must keep its own.
    await sqlOn(source, 'UPDATE public.orders SET qty = -1 WHERE id % 100 = 0');
    await sqlOn(source, 'TRUNCATE app.events');
    await sqlOn(source, "INSERT INTO app.events VALUES (1, 1, '[]'), (2, 2, NULL)");
    const streamed = await converged('the streamed changes');
    expect(streamed.events).toHaveLength(2);
    const toasted = streamed.orders.find((o) => o.id === '200');
    expect(toasted).toMatchObject({ qty: -1 });
    expect(String(toasted?.note)).toHaveLength(6400);

    const metrics = (await service.request('GET', '/v1/pipelines/to-mysql/metrics')).body;
    expect(metrics).toMatchObject({ state: 'running', sink_errors_total: 0 });
  });

  it('counts a failed sink write and retries it', async () => {
    // Hold the checkpoint row, so the sink's next batch waits for it; then end that session.
    await admin.query('START TRANSACTION');
    await admin.query(`SELECT * FROM \`${database}\`._replicator_checkpoints FOR UPDATE`);
    await sqlOn(source, "INSERT INTO public.orders (note) VALUES ('while the sink is blocked')");
    const waiting = await waitFor(async () => {
      const [rows] = await admin.query<RowDataPacket[]>(
        "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%_replicator_checkpoints%FOR UPDATE%'",
      );
      return rows[0]?.id as number | undefined;
    }, 'the sink to wait for the checkpoint row');
    await admin.query(`KILL CONNECTION ${Number(waiting)}`);
    await admin.query('ROLLBACK');
    await converged('the retried batch');
    const metrics = await waitFor(async () => {
      const body = (await service.request('GET', '/v1/pipelines/to-mysql/metrics')).body;
      return body.state === 'running' && body.sink_errors_total >= 1 ? body : undefined;
    }, 'the sink error to be counted');
    expect(metrics.sink_errors_total).toBeGreaterThanOrEqual(1);
  });
});
