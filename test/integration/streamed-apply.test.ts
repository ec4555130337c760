import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** Rows the sink's held transaction wrote and did not commit yet: what a reader sees is none of them. */
const heldSession = async (sink: string) =>
  (
    await sqlOn<{ n: number }>(
      sink,
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'replicator-sink-streamed' AND backend_xid IS NOT NULL`,
    )
  )[0]?.n ?? 0;
const count = async (url: string, where = 'true') =>
  (await sqlOn<{ n: number }>(url, `SELECT count(*)::int AS n FROM big WHERE ${where}`))[0]?.n ?? 0;

describe('a large transaction written into the sink while it arrives', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let service: TestService;
  let source: pg.Client;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'streamed_apply');
    const dbName = new URL(dbs.source).pathname.slice(1);
    // The walsenders of this database stream transactions over 64 kB before their commit.
    await sqlOn(
      dbs.source,
      `ALTER DATABASE ${dbName} SET logical_decoding_work_mem = '64kB';
       CREATE TABLE big (id bigint PRIMARY KEY, v text NOT NULL);
       INSERT INTO big SELECT i, 'seed' FROM generate_series(1, 100) AS i`,
    );
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
    // Pieces of 2,000 changes (a batch): the transactions below span several.
    await startConvergedPipeline(service, dbs, 'streamed', ['public.big'], {
      sink: { connection: 'dst', properties: { batch_max_events: '2000' } },
    });
    source = new pg.Client({ connectionString: dbs.source });
    await source.connect();
  });
  afterAll(async () => {
    await source?.end();
    await service?.stop();
  });

  it('applies it with a subtransaction rolled back, while small transactions commit beside it, and equals the source', async () => {
    await source.query('BEGIN');
    await source.query(`INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1001, 21000) AS i`);
    await source.query(`UPDATE big SET v = 'changed by the big one' WHERE id <= 50`);
    await source.query('SAVEPOINT undone');
    await source.query(`INSERT INTO big SELECT i, 'rolled back' FROM generate_series(30001, 40000) AS i`);
    await source.query(`DELETE FROM big WHERE id BETWEEN 51 AND 60`);
    await source.query('ROLLBACK TO SAVEPOINT undone');
    await source.query('SAVEPOINT kept');
    await source.query(`INSERT INTO big SELECT i, 'kept' FROM generate_series(40001, 50000) AS i`);
    await source.query('RELEASE SAVEPOINT kept');
    // The sink holds part of it, uncommitted, before the source commits it.
    await waitFor(async () => (await heldSession(dbs.sink)) > 0, 'the held transaction in the sink');
    expect(await count(dbs.sink, 'id > 1000')).toBe(0);
    // Small transactions of rows it does not hold are applied meanwhile.
    await sqlOn(
      dbs.source,
      `INSERT INTO big VALUES (90001, 'beside'); UPDATE big SET v = 'beside' WHERE id = 99`,
    );
    await waitFor(
      async () => (await count(dbs.sink, "v = 'beside'")) === 2,
      'the small transactions applied',
    );
    // Beside it, not instead of it: the held transaction is still there.
    expect(await heldSession(dbs.sink)).toBe(1);
    await source.query(`INSERT INTO big SELECT i, 'last' FROM generate_series(50001, 60000) AS i`);
    await source.query('COMMIT');
    await waitConverged(dbs.source, dbs.sink, 'big');
    expect(await count(dbs.sink, "v = 'rolled back'")).toBe(0);
    expect(await count(dbs.sink, 'id BETWEEN 51 AND 60')).toBe(10);
  }, 180_000);

  it('rolls back one aborted whole, and applies the next one', async () => {
    const before = await count(dbs.sink);
    await source.query('BEGIN');
    await source.query(`INSERT INTO big SELECT i, 'aborted' FROM generate_series(100001, 120000) AS i`);
    await waitFor(async () => (await heldSession(dbs.sink)) > 0, 'the held transaction in the sink');
    await source.query('ROLLBACK');
    await waitFor(async () => (await heldSession(dbs.sink)) === 0, 'the held transaction rolled back');
    await sqlOn(dbs.source, `INSERT INTO big SELECT i, 'after' FROM generate_series(120001, 140000) AS i`);
    await waitConverged(dbs.source, dbs.sink, 'big');
    expect(await count(dbs.sink)).toBe(before + 20_000);
  }, 180_000);

  it('falls back to the replay when its COPY meets a key the sink holds already, and equals the source', async () => {
    // A row written into the sink behind the pipeline's back, with a key the transaction inserts.
    await sqlOn(dbs.sink, `INSERT INTO big VALUES (305000, 'written in the sink')`);
    await source.query('BEGIN');
    await source.query(`INSERT INTO big SELECT i, 'streamed' FROM generate_series(300001, 310000) AS i`);
    await source.query(`INSERT INTO big SELECT i, 'streamed' FROM generate_series(310001, 320000) AS i`);
    await source.query('COMMIT');
    await waitConverged(dbs.source, dbs.sink, 'big');
    expect(await count(dbs.sink, "id = 305000 AND v = 'streamed'")).toBe(1);
  }, 180_000);

  it('falls back to the replay when the transaction truncates, and equals the source', async () => {
    await source.query('BEGIN');
    await source.query(
      `INSERT INTO big SELECT i, 'before truncate' FROM generate_series(200001, 220000) AS i`,
    );
    await waitFor(async () => (await heldSession(dbs.sink)) > 0, 'the held transaction in the sink');
    await source.query('TRUNCATE big');
    await source.query(`INSERT INTO big SELECT i, 'after truncate' FROM generate_series(1, 20000) AS i`);
    await source.query('COMMIT');
    await waitConverged(dbs.source, dbs.sink, 'big');
  }, 180_000);
});
