import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

interface TableState {
  table: string;
  status: string;
  reason: string | null;
  dropped_at: string | null;
}

// Each step waits for the slot check's 10 s pace, and a machine under load stretches that.
describe('a table dropped at the source while the pipeline streams', { timeout: 240_000 }, () => {
  let dbs: { store: string; source: string; sink: string };
  let service: TestService;

  const progress = async (): Promise<TableState[]> =>
    (await service.request('GET', '/v1/pipelines/drops/progress')).body.tables;
  const tableState = async (table: string) => (await progress()).find((t) => t.table === table);
  const pipeline = async () => (await service.request('GET', '/v1/pipelines/drops')).body;
  const sinkCount = async (table: string) =>
    Number((await sqlOn(dbs.sink, `SELECT count(*) AS n FROM ${table}`))[0]?.n);
  const waitRunning = () =>
    waitFor(async () => (await pipeline()).state === 'running', 'the pipeline to run again');
  const waitDropped = async (table: string): Promise<TableState> =>
    waitFor(async () => {
      const state = await tableState(table);
      return state?.status === 'dropped' ? state : undefined;
    }, `${table} to be shown dropped`) as Promise<TableState>;
  // Writes to the table that stays, then waits for the sink to have them: the pipeline still streams it.
  let nextKeep = 1000;
  const keepStreaming = async () => {
    await sqlOn(
      dbs.source,
      `INSERT INTO keep SELECT g, 'k' || g FROM generate_series(${nextKeep}, ${nextKeep + 9}) g`,
    );
    nextKeep += 10;
    await waitConverged(dbs.source, dbs.sink, 'keep');
  };

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'dropped',
      `CREATE TABLE keep (id int PRIMARY KEY, v text);
       CREATE TABLE gone (id int PRIMARY KEY, v text);
       CREATE TABLE later (id int PRIMARY KEY, v text);
       INSERT INTO keep SELECT g, 'k' || g FROM generate_series(1, 100) g;
       INSERT INTO gone SELECT g, 'g' || g FROM generate_series(1, 100) g;
       INSERT INTO later SELECT g, 'l' || g FROM generate_series(1, 100) g;`,
    ));
    await startConvergedPipeline(service, dbs, 'drops', ['public.keep', 'public.gone', 'public.later']);
  });
  afterAll(() => service?.stop());

  it('is shown dropped with its reason while the other tables keep streaming', async () => {
    // Changes made before the DROP are in the WAL ahead of it: they still reach the sink.
    await sqlOn(dbs.source, `INSERT INTO gone SELECT g, 'late' FROM generate_series(101, 110) g`);
    await sqlOn(dbs.source, 'DROP TABLE gone');
    await keepStreaming();

    const gone = await waitDropped('public.gone');
    expect(gone.reason).toContain('does not exist at the source');
    expect(Date.parse(gone.dropped_at as string)).not.toBeNaN();
    const view = await pipeline();
    expect(view.state).toBe('running');
    expect(view.warning).toContain('public.gone');
    await keepStreaming();
    // The sink's copy is kept as it was, with the changes made before the drop.
    await waitFor(async () => (await sinkCount('gone')) === 110, 'the changes before the drop in the sink');
    expect((await tableState('public.keep'))?.status).toBe('streaming');
  });

  it('does not fail a stop and start, and stays shown dropped', async () => {
    await service.request('PUT', '/v1/pipelines/drops/state', { state: 'stop' });
    await waitFor(async () => (await pipeline()).state === 'stopped', 'the pipeline to stop');
    const started = await service.request('PUT', '/v1/pipelines/drops/state', { state: 'start' });
    expect(started.status).toBe(200);
    await waitRunning();
    expect((await tableState('public.gone'))?.status).toBe('dropped');
    await keepStreaming();
    await waitFor(
      async () => (await pipeline()).warning?.includes('public.gone'),
      'the warning after the start',
    );
  });

  it('does not fail a restart of the service', async () => {
    await service.stop();
    service = await startTestService(testConfig(dbs.store));
    await waitRunning();
    expect((await tableState('public.gone'))?.status).toBe('dropped');
    await keepStreaming();
  });

  it('marks a copied table dropped while the pipeline was stopped at its next start', async () => {
    await service.request('PUT', '/v1/pipelines/drops/state', { state: 'stop' });
    await waitFor(async () => (await pipeline()).state === 'stopped', 'the pipeline to stop');
    await sqlOn(dbs.source, 'DROP TABLE later');
    expect((await service.request('PUT', '/v1/pipelines/drops/state', { state: 'start' })).status).toBe(200);
    await waitRunning();
    const later = await waitDropped('public.later');
    expect(later.reason).toContain('does not exist at the source');
    await keepStreaming();
    expect(await sinkCount('later')).toBe(100);
  });

  it('lets the definition keep or remove a dropped table, and still refuses a table that never existed', async () => {
    const definition = (tables: string[]) => ({
      source: { connection: 'src', tables },
      sink: { connection: 'dst', properties: { batch_max_events: '500' } },
    });
    const kept = await service.request(
      'PUT',
      '/v1/pipelines/drops',
      definition(['public.keep', 'public.gone', 'public.later']),
    );
    expect(kept.status).toBe(200);
    const added = await service.request(
      'PUT',
      '/v1/pipelines/drops',
      definition(['public.keep', 'public.gone', 'public.later', 'public.never']),
    );
    expect(added.status).toBe(422);
    expect(added.body.error).toContain('public.never');
    expect(added.body.error).not.toContain('public.gone');

    const removed = await service.request(
      'PUT',
      '/v1/pipelines/drops',
      definition(['public.keep', 'public.later']),
    );
    expect(removed.status).toBe(200);
    await waitRunning();
    await waitFor(
      async () => (await progress()).every((t) => t.table !== 'public.gone'),
      'gone to leave the progress',
    );
    await waitFor(async () => {
      const warning = (await pipeline()).warning as string | null;
      return warning !== null && !warning.includes('public.gone') && warning.includes('public.later');
    }, 'the warning to name only the table still in the definition');
    await keepStreaming();
    // Nothing is deleted from the sink: its copy of the removed table stays.
    expect(await sinkCount('gone')).toBe(110);
  });

  it('copies a table re-created under the same name again on a backfill, then streams it', async () => {
    const missing = await service.request('POST', '/v1/pipelines/drops/backfill', {
      tables: ['public.later'],
    });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toContain('does not exist');

    await sqlOn(
      dbs.source,
      `CREATE TABLE later (id int PRIMARY KEY, v text);
       INSERT INTO later SELECT g, 'again' || g FROM generate_series(1, 40) g`,
    );
    const backfill = await service.request('POST', '/v1/pipelines/drops/backfill', {
      tables: ['public.later'],
    });
    expect(backfill.status).toBe(202);
    await waitFor(
      async () => (await tableState('public.later'))?.status === 'streaming',
      'later to stream again',
    );
    await waitConverged(dbs.source, dbs.sink, 'later');
    await sqlOn(dbs.source, `INSERT INTO later SELECT g, 'new' FROM generate_series(41, 50) g`);
    await sqlOn(dbs.source, `UPDATE later SET v = 'changed' WHERE id = 1`);
    await waitConverged(dbs.source, dbs.sink, 'later');
    const later = await tableState('public.later');
    expect(later).toMatchObject({ reason: null, dropped_at: null });
    await waitFor(async () => (await pipeline()).warning === null, 'the warning to clear');
    await keepStreaming();
  });

  it('replicates a TRUNCATE of a table while streaming: the sink table empties, later inserts arrive', async () => {
    await sqlOn(dbs.source, 'TRUNCATE keep');
    await waitFor(async () => (await sinkCount('keep')) === 0, 'the sink copy of keep to be empty');
    await keepStreaming();
    expect(await sinkCount('keep')).toBe(10);
  });
});
