import type { DatabasePool } from 'slonik';
import { describe, expect, it } from 'vitest';
import { HealthService } from '../../src/health/health-service.js';

/** A pool that answers the health queries with fixed counts until it is cut off. */
function fakeStore(counts: { workers: number; running: number }) {
  const store = { up: true, ended: false };
  const db = {
    query: async () => ({ rows: [] }),
    oneFirst: async (query: { sql: string }) =>
      query.sql.includes('workers') ? counts.workers : counts.running,
  };
  const pool = {
    transaction: async (fn: (connection: typeof db) => Promise<unknown>) => {
      if (!store.up) throw new Error('connect ECONNREFUSED\nsecond line');
      return fn(db);
    },
    state: () => ({ state: store.ended ? 'ENDED' : 'ACTIVE' }),
  };
  return { store, pool: pool as unknown as DatabasePool };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('health service', () => {
  it('reports the counts last read from the store while the store is down', async () => {
    const { store, pool } = fakeStore({ workers: 3, running: 2 });
    const health = new HealthService(pool, 60_000);
    await settle();
    store.up = false;
    const report = await health.report(null);
    expect(report).toMatchObject({ status: 'unavailable', workers: 3, pipelines_running: 2 });
    expect(report.checks[0]).toMatchObject({ name: 'store', status: 'failing' });
    expect(report.checks[0]?.message).toBe('metadata store unreachable: connect ECONNREFUSED');
    store.ended = true;
  });

  it('keeps the erroring_since of the first failure until the store is back', async () => {
    const { store, pool } = fakeStore({ workers: 1, running: 0 });
    const health = new HealthService(pool, 60_000);
    store.up = false;
    const first = await health.report(null);
    await settle();
    const second = await health.report(null);
    expect(second.checks[0]?.erroring_since).toBe(first.checks[0]?.erroring_since);
    store.up = true;
    const back = await health.report(null);
    expect(back).toMatchObject({
      status: 'ok',
      workers: 1,
      checks: [{ status: 'ok', erroring_since: null }],
    });
    store.ended = true;
  });
});
