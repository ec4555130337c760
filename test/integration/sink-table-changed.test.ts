import { randomBytes } from 'node:crypto';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

interface Pipeline {
  state: string;
  error: string | null;
}

const [cluster] = inject('pgClusters');

/** Waits until the pipeline is in `state`; a timeout names the state and error it was left in. */
async function stateOf(pipeline: () => Promise<Pipeline>, state: string): Promise<Pipeline> {
  let seen: Pipeline | undefined;
  try {
    return (await waitFor(async () => {
      seen = await pipeline();
      return seen.state === state ? seen : undefined;
    }, `the pipeline to be ${state}`)) as Pipeline;
  } catch (error) {
    throw new Error(`${(error as Error).message}; it is ${JSON.stringify(seen)}`);
  }
}

describe('a PostgreSQL sink table changed behind the pipeline', { timeout: 240_000 }, () => {
  let dbs: { store: string; source: string; sink: string };
  let service: TestService;

  const pipeline = async (): Promise<Pipeline> => (await service.request('GET', '/v1/pipelines/guard')).body;
  const tableState = async (table: string) =>
    (
      (await service.request('GET', '/v1/pipelines/guard/progress')).body.tables as {
        table: string;
        status: string;
        percent: number;
        reason: string | null;
      }[]
    ).find((t) => t.table === table);
  const setState = (state: 'start' | 'stop') =>
    service.request('PUT', '/v1/pipelines/guard/state', { state });
  const waitState = (state: string) => stateOf(pipeline, state);
  const stop = async () => {
    await setState('stop');
    await waitState('stopped');
  };
  const sinkHas = async (table: string) =>
    (await sqlOn(dbs.sink, 'SELECT to_regclass($1) IS NOT NULL AS ok', [table]))[0]?.ok === true;

  /** Backfills `table` of the failed pipeline and waits until it is copied, equal to the source, and streams. */
  const backfillBack = async (table: string) => {
    const accepted = await service.request('POST', '/v1/pipelines/guard/backfill', {
      tables: [`public.${table}`],
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body.state).toBe('starting');
    await waitState('running');
    await waitFor(
      async () => (await tableState(`public.${table}`))?.status === 'streaming',
      `${table} to stream`,
    );
    await waitConverged(dbs.source, dbs.sink, table);
    // It streams again: a change made now reaches it.
    await sqlOn(dbs.source, `UPDATE ${table} SET v = 'after' WHERE id = 1`);
    await waitConverged(dbs.source, dbs.sink, table);
  };

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'sinkchanged',
      `CREATE TABLE dropped (id int PRIMARY KEY, v text);
       CREATE TABLE narrowed (id int PRIMARY KEY, v text, w int);
       CREATE TABLE emptied (id int PRIMARY KEY, v text);
       CREATE TABLE running (id int PRIMARY KEY, v text);
       INSERT INTO dropped SELECT g, 'd' || g FROM generate_series(1, 300) g;
       INSERT INTO narrowed SELECT g, 'n' || g, g FROM generate_series(1, 300) g;
       INSERT INTO emptied SELECT g, 'e' || g FROM generate_series(1, 300) g;
       INSERT INTO running SELECT g, 'r' || g FROM generate_series(1, 300) g;`,
    ));
    await startConvergedPipeline(service, dbs, 'guard', [
      'public.dropped',
      'public.narrowed',
      'public.emptied',
      'public.running',
    ]);
  });
  afterAll(() => service?.stop());

  it('fails the start for a table dropped by hand, does not create it empty, and a backfill brings it back', async () => {
    await stop();
    await sqlOn(dbs.sink, 'DROP TABLE dropped');
    expect((await setState('start')).status).toBe(200);
    const failed = await waitState('failed');
    expect(failed.error).toContain('SINK_TABLE_CHANGED');
    expect(failed.error).toContain('public.dropped');
    expect(failed.error).toContain('does not exist any more');
    expect(failed.error).toContain('replicator backfill guard public.dropped');
    expect(failed.error).toContain('POST /v1/pipelines/guard/backfill');
    expect(await sinkHas('public.dropped')).toBe(false);
    // Its progress says so, never the 100 % of the copy the sink lost.
    expect(await tableState('public.dropped')).toMatchObject({
      status: 'sink_changed',
      percent: 0,
      reason: 'does not exist any more',
    });
    expect((await tableState('public.running'))?.status).toBe('streaming');

    await backfillBack('dropped');
  });

  it('fails the start for a column dropped by hand; a backfill gives it back and copies the table', async () => {
    await stop();
    await sqlOn(dbs.sink, 'ALTER TABLE narrowed DROP COLUMN w');
    await setState('start');
    const failed = await waitState('failed');
    expect(failed.error).toContain('SINK_TABLE_CHANGED');
    expect(failed.error).toContain('public.narrowed');
    expect(failed.error).toContain('["w"]');

    await backfillBack('narrowed');
  });

  it('fails the start for a table emptied by hand while the source has rows; a backfill refills it', async () => {
    await stop();
    await sqlOn(dbs.sink, 'TRUNCATE emptied');
    await setState('start');
    const failed = await waitState('failed');
    expect(failed.error).toContain('SINK_TABLE_CHANGED');
    expect(failed.error).toContain('public.emptied');
    expect(failed.error).toContain('is empty');
    expect((await sqlOn(dbs.sink, 'SELECT count(*)::int AS n FROM emptied'))[0]?.n).toBe(0);

    await backfillBack('emptied');
  });

  it('starts a table emptied at the source and in the sink alike, that got rows again while stopped', async () => {
    await sqlOn(dbs.source, 'DELETE FROM emptied');
    await waitConverged(dbs.source, dbs.sink, 'emptied');
    await stop();
    // The sink followed the source: the rows written meanwhile reach it once started.
    await sqlOn(dbs.source, `INSERT INTO emptied VALUES (1, 'again')`);
    await setState('start');
    await waitState('running');
    await waitConverged(dbs.source, dbs.sink, 'emptied');
    expect((await pipeline()).state).toBe('running');
  });

  it('fails with SINK_TABLE_CHANGED, not a retried error, when a table is dropped while it streams', async () => {
    await sqlOn(dbs.sink, 'DROP TABLE running');
    await sqlOn(dbs.source, `UPDATE running SET v = 'changed' WHERE id <= 10`);
    const failed = await waitState('failed');
    expect(failed.error).toContain('SINK_TABLE_CHANGED');
    expect(failed.error).toContain('public.running');
    expect(await sinkHas('public.running')).toBe(false);

    await backfillBack('running');
  });
});

describe('a MariaDB sink table dropped behind the pipeline', { timeout: 240_000 }, () => {
  const database = `changed_${randomBytes(6).toString('hex')}`;
  let dbs: { store: string; source: string; sink: string };
  let service: TestService;
  let admin: Connection;

  const pipeline = async (): Promise<Pipeline> =>
    (await service.request('GET', '/v1/pipelines/to-maria')).body;
  const waitState = (state: string) => stateOf(pipeline, state);
  const sinkRows = async () =>
    (await admin.query<RowDataPacket[]>(`SELECT id, v FROM \`${database}\`.items ORDER BY id`))[0].map(
      (r) => [Number(r.id), r.v],
    );
  const sourceRows = async () =>
    (await sqlOn(dbs.source, 'SELECT id, v FROM items ORDER BY id')).map((r) => [Number(r.id), r.v]);

  beforeAll(async () => {
    admin = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', password: '' });
    await admin.query(`CREATE DATABASE \`${database}\``);
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'sinkchanged_maria',
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'i' || g FROM generate_series(1, 200) g;`,
    ));
    const dst = await service.request('POST', '/v1/connections', {
      name: 'maria',
      type: 'mysql',
      dsn: `mysql://root@127.0.0.1:3306/${database}`,
    });
    expect(dst.status).toBe(201);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-maria',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'maria' },
    });
    expect(created.status).toBe(201);
    await service.request('PUT', '/v1/pipelines/to-maria/state', { state: 'start' });
    const expected = await sourceRows();
    await waitFor(
      async () => JSON.stringify(await sinkRows().catch(() => [])) === JSON.stringify(expected),
      'the copy',
    );
  });
  afterAll(async () => {
    await service?.stop();
    await admin?.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin?.end();
  });

  it('fails the start with SINK_TABLE_CHANGED and a backfill brings the table back', async () => {
    await service.request('PUT', '/v1/pipelines/to-maria/state', { state: 'stop' });
    await waitState('stopped');
    await admin.query(`DROP TABLE \`${database}\`.items`);
    await service.request('PUT', '/v1/pipelines/to-maria/state', { state: 'start' });
    const failed = await waitState('failed');
    expect(failed.error).toContain('SINK_TABLE_CHANGED');
    expect(failed.error).toContain('public.items');
    const [tables] = await admin.query<RowDataPacket[]>(
      'SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [database, 'items'],
    );
    expect(tables).toHaveLength(0);

    const accepted = await service.request('POST', '/v1/pipelines/to-maria/backfill', {
      tables: ['public.items'],
    });
    expect(accepted.status).toBe(202);
    await waitState('running');
    await sqlOn(dbs.source, `UPDATE items SET v = 'after' WHERE id = 1`);
    const expected = await sourceRows();
    await waitFor(
      async () => JSON.stringify(await sinkRows().catch(() => [])) === JSON.stringify(expected),
      'the table back',
    );
  });
});
