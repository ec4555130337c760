import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HISTORY_KEEP_MS, HISTORY_MAX_POINTS } from '../../src/pipelines/history-resolution.js';
import { pipelineHistoryStore } from '../../src/store/pipeline-history-store.js';
import { createStorePool } from '../../src/store/pool.js';
import {
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

interface Point {
  at: string;
  state: string;
  phase: string;
  events_per_second: number;
  copy_rows_per_second: number;
  lag_ms: number;
  lag_bytes: number | null;
  sink_errors: number;
}

/** Rows enough that the snapshot of the table lasts over at least one second of the history. */
const BIG_ROWS = 300_000;

/** The charts start from the server's history, which tells the truth while the pipeline is paused too. */
describe("a pipeline's history", { timeout: 120_000 }, () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  const points = async (window = '1h') =>
    (await service.request('GET', `/v1/pipelines/hist/history?window=${window}`)).body.points as Point[];

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(
      adminUrl,
      `hist_${randomBytes(4).toString('hex')}`,
      `CREATE TABLE t (id serial PRIMARY KEY, v int);
       CREATE TABLE big (id integer PRIMARY KEY, pad text NOT NULL);
       INSERT INTO big SELECT i, repeat('x', 40) FROM generate_series(1, ${BIG_ROWS}) AS i;
       ANALYZE big;`,
    ));
    await startConvergedPipeline(service, dbs, 'hist', ['public.t', 'public.big']);
  });
  afterAll(() => service?.stop());

  it('records a point every 10 s while it runs, and a paused one whose lag grows', async () => {
    await sqlOn(dbs.source, 'INSERT INTO t (v) SELECT g FROM generate_series(1, 100) g');
    const running = (await waitFor(
      // The first points of a run come before its first phase, or during its snapshot.
      async () => (await points()).find((p) => p.state === 'running' && p.phase === 'streaming'),
      'a point',
    )) as Point;
    expect(running).toMatchObject({ phase: 'streaming', sink_errors: 0 });
    expect(typeof running.events_per_second).toBe('number');

    await service.request('PUT', '/v1/pipelines/hist/state', { state: 'pause' });
    await sqlOn(dbs.source, 'INSERT INTO t (v) SELECT g FROM generate_series(1, 10) g');
    const paused = (await waitFor(
      async () => (await points()).find((p) => p.state === 'paused' && p.lag_ms > 0),
      'a paused point with its lag',
    )) as Point;
    expect(paused.lag_bytes).toBeGreaterThan(0);
    const all = await points();
    expect(all.map((p) => p.at)).toEqual([...all.map((p) => p.at)].sort());
    await service.request('PUT', '/v1/pipelines/hist/state', { state: 'resume' });
  });

  it('records the rows its snapshot copied a second, which are not events, and 0 once it streams', async () => {
    const copying = (await waitFor(
      async () => (await points()).find((p) => p.copy_rows_per_second > 0),
      'a point of the snapshot',
    )) as Point;
    // Every row copied counted once: none lost, none counted again (no spike).
    const all = await points();
    const copied = all.reduce((sum, p) => sum + p.copy_rows_per_second * 10, 0);
    expect(copied).toBeGreaterThanOrEqual(BIG_ROWS * 0.99);
    for (const p of all) expect(p.copy_rows_per_second).toBeLessThanOrEqual(BIG_ROWS);
    const after = (await waitFor(
      async () =>
        (
          await points()
        ).find((p) => p.at > copying.at && p.phase === 'streaming' && p.copy_rows_per_second === 0),
      'a point after the snapshot',
    )) as Point;
    expect(after.copy_rows_per_second).toBe(0);
  });

  it('answers a window it does not keep with 400', async () => {
    const refused = await service.request('GET', '/v1/pipelines/hist/history?window=3d');
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/^window: /);
    expect((await service.request('GET', '/v1/pipelines/nope/history')).status).toBe(404);
  });
  it('answers a day with points merged two minutes at a time, the largest lag of each kept', async () => {
    const id = (await service.request('GET', '/v1/pipelines/hist')).body.id as string;
    // A day of points every 10 s, ending two hours ago: lag_ms counts them, throughputs alternate.
    await sqlOn(
      dbs.store,
      `INSERT INTO pipeline_history
         (pipeline_id, at, state, phase, events_per_second, copy_rows_per_second, lag_ms, lag_bytes, sink_errors)
       SELECT $1, to_timestamp(floor(extract(epoch FROM now()) / 120) * 120) - interval '26 hours' + n * interval '10 s',
         'running', 'streaming', (n % 2) * 2, (n % 2) * 500, n, NULL, 1
       FROM generate_series(0, 24 * 360 - 1) n ON CONFLICT DO NOTHING`,
      [id],
    );
    const day = (await service.request('GET', '/v1/pipelines/hist/history?window=24h')).body;
    expect(day.resolution_seconds).toBe(120);
    expect(day.points.length).toBeLessThanOrEqual(HISTORY_MAX_POINTS + 1);
    const seeded = (day.points as Point[]).filter((p) => p.sink_errors === 12);
    expect(seeded.length).toBeGreaterThan(600);
    for (const [i, p] of seeded.entries()) {
      // Twelve points a bucket: the newest's count is the largest lag, the throughputs their mean.
      expect(p.events_per_second).toBe(1);
      expect(p.copy_rows_per_second).toBe(250);
      if (i > 0) expect(p.lag_ms - (seeded[i - 1] as Point).lag_ms).toBe(12);
      expect(Date.parse(p.at) % 120_000).toBe(110_000);
    }
    const hour = (await service.request('GET', '/v1/pipelines/hist/history?window=1h')).body;
    expect(hour.resolution_seconds).toBe(10);
    expect(
      (await service.request('GET', '/v1/pipelines/hist/history?window=6h')).body.resolution_seconds,
    ).toBe(30);
  });

  it('keeps 48 hours and forgets what is older', async () => {
    const id = (await service.request('GET', '/v1/pipelines/hist')).body.id as string;
    await sqlOn(
      dbs.store,
      `INSERT INTO pipeline_history (pipeline_id, at, state, phase, events_per_second, lag_ms, lag_bytes, sink_errors)
       VALUES ($1, now() - interval '47 hours', 'running', 'streaming', 0, 47, NULL, 0),
              ($1, now() - interval '49 hours', 'running', 'streaming', 0, 49, NULL, 0)`,
      [id],
    );
    const pool = await createStorePool(dbs.store);
    try {
      await pipelineHistoryStore.prune(pool, HISTORY_KEEP_MS);
    } finally {
      await pool.end();
    }
    const kept = await sqlOn(
      dbs.store,
      "SELECT lag_ms FROM pipeline_history WHERE at < now() - interval '46 hours'",
    );
    expect(kept.map((r) => Number(r.lag_ms))).toEqual([47]);
    const all = (await service.request('GET', '/v1/pipelines/hist/history?window=48h')).body;
    expect(all.resolution_seconds).toBe(240);
    expect((all.points as Point[]).some((p) => p.lag_ms === 47)).toBe(true);
  });
});
