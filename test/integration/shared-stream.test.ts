import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationService, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const [cluster] = inject('pgClusters');

const TABLES = ['t1', 't2', 't3', 'solo'];

/**
 * Pipelines of one source connection read one shared stream: one slot and one walsender on the
 * source, each pipeline with its own checkpoint in its own sink tables. A pipeline given a slot
 * of its own reads beside it.
 */
describe('pipelines sharing one source stream', { timeout: 240_000 }, () => {
  let service: TestService;
  let dbs: { store: string; source: string; sink: string };
  const api = (method: string, path: string, body?: unknown) => service.request(method, path, body);
  const state = (name: string, to: string) => api('PUT', `/v1/pipelines/${name}/state`, { state: to });
  const running = (name: string) =>
    waitFor(
      async () => (await api('GET', `/v1/pipelines/${name}`)).body.state === 'running',
      `${name} running`,
    );

  /** The logical slots on the source and whether a walsender reads each. */
  const slots = () =>
    sqlOn<{ slot_name: string; active: boolean; confirmed: string | null }>(
      dbs.source,
      `SELECT slot_name, active, confirmed_flush_lsn::text AS confirmed FROM pg_replication_slots
        WHERE database = current_database() ORDER BY slot_name`,
    );
  const walsenders = async () =>
    Number(
      (
        await sqlOn<{ n: string }>(
          dbs.source,
          `SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'walsender' AND datname = current_database()`,
        )
      )[0]?.n,
    );
  const lsnAtOrBefore = async (a: string | null | undefined, b: string) =>
    (await sqlOn<{ ok: boolean }>(dbs.source, 'SELECT $1::pg_lsn <= $2::pg_lsn AS ok', [a, b]))[0] as {
      ok: boolean;
    };
  const insertEverywhere = (n: number) =>
    sqlOn(
      dbs.source,
      TABLES.map((t) => `INSERT INTO ${t} (v) SELECT g FROM generate_series(1, ${n}) g;`).join('\n'),
    );

  async function createPipeline(name: string, tables: string[], slot: 'shared' | 'own') {
    const created = await api('POST', '/v1/pipelines', {
      name,
      source: { connection: 'src', tables: tables.map((t) => `public.${t}`) },
      sink: { connection: 'dst' },
    });
    expect(created.status).toBe(201);
    await sqlOn(dbs.store, 'UPDATE pipelines SET source_slot = $1 WHERE name = $2', [slot, name]);
  }

  beforeAll(async () => {
    const setup = TABLES.map(
      (t) =>
        `CREATE TABLE ${t} (id serial PRIMARY KEY, v integer NOT NULL); INSERT INTO ${t} (v) SELECT g FROM generate_series(1, 500) g;`,
    ).join('\n');
    ({ service, dbs } = await replicationService(cluster?.adminUrl as string, 'shared_stream', setup));
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('copies and streams three pipelines through one slot and one walsender', async () => {
    await createPipeline('p1', ['t1'], 'shared');
    await createPipeline('p2', ['t2'], 'shared');
    await createPipeline('p3', ['t3'], 'shared');
    for (const name of ['p1', 'p2', 'p3']) expect((await state(name, 'start')).status).toBe(200);
    for (const name of ['p1', 'p2', 'p3']) await running(name);
    await insertEverywhere(300);
    for (const t of ['t1', 't2', 't3']) await waitConverged(dbs.source, dbs.sink, t);
    const found = await slots();
    expect(found).toHaveLength(1);
    expect(found[0]?.slot_name).toMatch(/^replicator_s_[0-9a-f]{24}$/);
    expect(await walsenders()).toBe(1);
    // The publication carries the union of the pipelines' tables.
    const published = await sqlOn<{ tablename: string }>(
      dbs.source,
      'SELECT tablename FROM pg_publication_tables WHERE pubname = $1 ORDER BY tablename',
      [found[0]?.slot_name],
    );
    expect(published.map((p) => p.tablename)).toEqual(['t1', 't2', 't3']);
  });

  it('holds the slot for a paused pipeline while the others stream, and gives it everything on resume', async () => {
    expect((await state('p2', 'pause')).status).toBe(200);
    await waitFor(async () => (await api('GET', '/v1/pipelines/p2')).body.state === 'paused', 'p2 paused');
    const [{ lsn: pausedAt }] = (await sqlOn<{ lsn: string }>(
      dbs.source,
      'SELECT pg_current_wal_lsn()::text AS lsn',
    )) as [{ lsn: string }];
    const [before] = await sqlOn<{ n: string }>(dbs.sink, 'SELECT count(*) AS n FROM t2');
    await insertEverywhere(200);
    await waitConverged(dbs.source, dbs.sink, 't1');
    await waitConverged(dbs.source, dbs.sink, 't3');
    const [after] = await sqlOn<{ n: string }>(dbs.sink, 'SELECT count(*) AS n FROM t2');
    expect(after?.n).toBe(before?.n);
    // Each pipeline's figures are its own: the paused one shows what it has not got and the WAL
    // the source keeps for it; the others, though the slot is held back for it, are caught up.
    const p2 = await waitFor(async () => {
      const { body } = await api('GET', '/v1/pipelines/p2');
      return body.replication_lag_bytes > 0 && body.retained_wal_bytes > 0 ? body : undefined;
    }, 'p2 to show its lag and the WAL kept for it');
    expect(p2.state).toBe('paused');
    for (const name of ['p1', 'p3']) {
      await waitFor(async () => {
        const { body } = await api('GET', `/v1/pipelines/${name}`);
        return body.replication_lag_bytes === 0 && body.replication_lag_ms === 0;
      }, `${name}: lag 0 while p2 holds the slot`);
    }
    // The slot stays at or before where the paused pipeline stopped: its changes are kept.
    expect((await lsnAtOrBefore((await slots())[0]?.confirmed, pausedAt)).ok).toBe(true);
    expect((await state('p2', 'resume')).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 't2');
    expect(await walsenders()).toBe(1);
    // Once it holds everything again, the slot moves on.
    await waitFor(
      async () => !(await lsnAtOrBefore((await slots())[0]?.confirmed, pausedAt)).ok,
      'the slot to move past where p2 paused',
    );
  });

  it('runs a pipeline with a slot of its own beside the shared stream', async () => {
    await createPipeline('own', ['solo'], 'own');
    expect((await state('own', 'start')).status).toBe(200);
    await running('own');
    await insertEverywhere(100);
    for (const t of TABLES) await waitConverged(dbs.source, dbs.sink, t);
    const found = await slots();
    expect(found).toHaveLength(2);
    expect(found.map((s) => s.slot_name).filter((n) => n.startsWith('replicator_s_'))).toHaveLength(1);
    expect(await walsenders()).toBe(2);
  });

  it('keeps the shared slot until its last pipeline is deleted', async () => {
    const published = async () =>
      (
        await sqlOn<{ tablename: string }>(
          dbs.source,
          `SELECT tablename FROM pg_publication_tables WHERE pubname LIKE 'replicator\\_s\\_%' ORDER BY tablename`,
        )
      ).map((r) => r.tablename);
    expect(await published()).toEqual(['t1', 't2', 't3']);
    for (const name of ['p1', 'p2']) {
      expect((await state(name, 'stop')).status).toBe(200);
      expect((await api('DELETE', `/v1/pipelines/${name}`)).status).toBe(204);
    }
    // The deleted pipelines' tables leave the stream: the source sends their changes for no one otherwise.
    expect(await published()).toEqual(['t3']);
    await insertEverywhere(50);
    await waitConverged(dbs.source, dbs.sink, 't3');
    expect((await slots()).filter((s) => s.slot_name.startsWith('replicator_s_'))).toHaveLength(1);
    expect((await state('p3', 'stop')).status).toBe(200);
    expect((await api('DELETE', '/v1/pipelines/p3')).status).toBe(204);
    expect((await slots()).filter((s) => s.slot_name.startsWith('replicator_s_'))).toHaveLength(0);
  });
});
