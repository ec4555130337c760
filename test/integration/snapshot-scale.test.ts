import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

// Large copies are about this service, not about a PostgreSQL version: the first cluster is enough.
const [cluster] = inject('pgClusters');

describe('snapshots at scale', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  const converged = (table: string) => waitConverged(dbs.source, dbs.sink, table);
  const progressOf = async (name: string) =>
    (await service.request('GET', `/v1/pipelines/${name}/progress`)).body;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'scale');
    await sqlOn(
      dbs.source,
      `CREATE TABLE wide (id bigint PRIMARY KEY, a text, b integer, c timestamptz);
       INSERT INTO wide SELECT i, md5(i::text), i % 1000, '2024-01-01'::timestamptz + i * interval '1 s'
         FROM generate_series(1, 2000000) AS i;
       CREATE TABLE side (id integer PRIMARY KEY, v text);
       INSERT INTO side SELECT i, 'v' || i FROM generate_series(1, 1000) AS i;
       ANALYZE;`,
    );
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
  });
  afterAll(() => service?.stop());

  it('copies millions of rows in parallel partitions, reaching 100 percent, writes included', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'scale',
      source: { connection: 'src', tables: ['public.wide', 'public.side'] },
      sink: { connection: 'dst' },
      snapshot: { parallelism: 3, partition_rows: 300_000 },
    });
    expect(created.status).toBe(201);
    expect(created.body.snapshot).toEqual({ parallelism: 3, partition_rows: 300_000 });
    await service.request('PUT', '/v1/pipelines/scale/state', { state: 'start' });
    const during = await waitFor(async () => {
      const p = await progressOf('scale');
      const wide = p.tables.find((t: { table: string }) => t.table === 'public.wide');
      return p.phase === 'snapshot' && wide?.rows_done > 0 ? wide : undefined;
    }, 'the copy to be under way');
    expect(during.partitions_total).toBeGreaterThanOrEqual(6);
    expect(during.rows_total).toBeGreaterThan(1_500_000);
    expect(during.percent).toBeGreaterThan(0);
    expect(during.percent).toBeLessThan(100);
    expect(during.partitions).toHaveLength(during.partitions_total);
    expect(during.partitions[0]).toMatchObject({ partition: '0', lower_bound: null });
    expect(during.partitions.at(-1).upper_bound).toBeNull();
    expect(during.partitions.some((p: { status: string }) => p.status !== 'pending')).toBe(true);
    expect(during.eta_seconds === null || during.eta_seconds >= 0).toBe(true);
    await sqlOn(
      dbs.source,
      'UPDATE wide SET b = -1 WHERE id % 100000 = 0; DELETE FROM wide WHERE id % 250000 = 7',
    );

    await waitFor(async () => (await progressOf('scale')).phase === 'streaming', 'streaming', 120_000);
    await converged('wide');
    await converged('side');
    for (const table of (await progressOf('scale')).tables) {
      expect(table.percent).toBe(100);
      expect(table.partitions_done).toBe(table.partitions_total);
      expect(table.partitions.every((p: { status: string }) => p.status === 'done')).toBe(true);
      expect(table.eta_seconds).toBeNull();
    }
    const wide = (await progressOf('scale')).tables.find((t: { table: string }) => t.table === 'public.wide');
    expect(wide.partitions.reduce((sum: number, p: { rows_done: number }) => sum + p.rows_done, 0)).toBe(
      wide.rows_done,
    );
    // Copied in parallel partitions into a table without an index, its key built once at the end:
    // as compact as the source's (built row by row across partitions, it was 35-55% larger).
    const keySize = async (url: string) =>
      Number(
        (
          await sqlOn<{ bytes: string }>(
            url,
            `SELECT pg_relation_size(conindid) AS bytes FROM pg_constraint
              WHERE conrelid = 'public.wide'::regclass AND contype = 'p'`,
          )
        )[0]?.bytes,
      );
    const [sourceKey, sinkKey] = [await keySize(dbs.source), await keySize(dbs.sink)];
    expect(sinkKey).toBeGreaterThan(0);
    expect(sinkKey).toBeLessThanOrEqual(sourceKey * 1.1);
  });

  it('backfills one table while the others keep streaming, losing nothing on either', async () => {
    // Drift in the sink that only a new copy repairs.
    await sqlOn(
      dbs.sink,
      "DELETE FROM wide WHERE id % 1000 = 3; UPDATE wide SET a = 'drift' WHERE id % 1000 = 4",
    );
    let writing = true;
    let round = 0;
    const writer = (async () => {
      while (writing) {
        round++;
        await sqlOn(
          dbs.source,
          `UPDATE wide SET b = b + 1 WHERE id % 50000 = ${round % 50000};
           INSERT INTO wide VALUES (${3_000_000 + round}, 'new', ${round}, now());
           UPDATE side SET v = 'r${round}' WHERE id = ${(round % 1000) + 1};
           INSERT INTO side VALUES (${5000 + round}, 'new')`,
        );
      }
    })();
    const accepted = await service.request('POST', '/v1/pipelines/scale/backfill', {
      tables: ['public.wide'],
    });
    expect(accepted).toMatchObject({ status: 202, body: { tables: ['public.wide'], state: 'running' } });
    const sideMax = async () => (await sqlOn(dbs.sink, 'SELECT max(id)::int AS m FROM side'))[0]?.m as number;
    const sideAtStart = await sideMax();
    let streamedDuringBackfill = false;
    let sawBackfill = false;
    await waitFor(
      async () => {
        const progress = await progressOf('scale');
        const wide = progress.tables.find((t: { table: string }) => t.table === 'public.wide');
        if (wide.status === 'backfill') {
          sawBackfill = true;
          expect(progress.phase).toBe('streaming');
          if ((await sideMax()) > sideAtStart) streamedDuringBackfill = true;
        }
        return sawBackfill && wide.status === 'streaming';
      },
      'the backfill to finish',
      120_000,
    );
    // The other table kept streaming while this one was copied.
    expect(streamedDuringBackfill).toBe(true);
    writing = false;
    await writer;
    await converged('wide');
    await converged('side');
    expect(await sqlOn(dbs.sink, "SELECT 1 FROM wide WHERE a = 'drift'")).toHaveLength(0);
  }, 240_000);

  it('refuses a backfill of a table that is not in the pipeline, or twice the same table', async () => {
    const foreign = await service.request('POST', '/v1/pipelines/scale/backfill', {
      tables: ['public.other'],
    });
    // The body asks for an action: a value outside what it allows is an invalid request.
    expect(foreign).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const twice = await service.request('POST', '/v1/pipelines/scale/backfill', {
      tables: ['public.side', 'public.side'],
    });
    expect(twice).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const none = await service.request('POST', '/v1/pipelines/nope/backfill', { tables: ['public.side'] });
    expect(none).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });
});
