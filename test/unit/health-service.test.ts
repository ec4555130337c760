import type { DatabasePool } from 'slonik';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HealthService } from '../../src/health/health-service.js';

/** A pool that answers the health queries with fixed counts until it is cut off. */
function fakeStore(counts: { workers: number; running: number }) {
  const store = { up: true, ended: false, reads: 0 };
  const db = {
    query: async () => ({ rows: [] }),
    oneFirst: async (query: { sql: string }) =>
      query.sql.includes('workers') ? counts.workers : counts.running,
  };
  const pool = {
    transaction: async (fn: (connection: typeof db) => Promise<unknown>) => {
      if (!store.up) throw new Error('connect ECONNREFUSED\nsecond line');
      const result = await fn(db);
      store.reads++;
      return result;
    },
    state: () => ({ state: store.ended ? 'ENDED' : 'ACTIVE' }),
  };
  return { store, pool: pool as unknown as DatabasePool };
}

describe('health service', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reports the counts last read from the store while the store is down', async () => {
    const { store, pool } = fakeStore({ workers: 3, running: 2 });
    const health = new HealthService(pool, 60_000);
    // The background read at construction: its counts are the last known ones.
    await expect.poll(() => store.reads).toBe(1);
    store.up = false;
    const report = await health.report(null);
    expect(report).toMatchObject({ status: 'unavailable', workers: 3, pipelines_running: 2 });
    expect(report.checks[0]).toMatchObject({ name: 'store', status: 'failing' });
    expect(report.checks[0]?.message).toBe('metadata store unreachable: connect ECONNREFUSED');
    store.ended = true;
  });

  it('keeps the erroring_since of the first failure until the store is back', async () => {
    // Only the clock is faked: the second failure comes a minute after the first.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2024-05-01T10:00:00.000Z'));
    const { store, pool } = fakeStore({ workers: 1, running: 0 });
    const health = new HealthService(pool, 60_000);
    store.up = false;
    const first = await health.report(null);
    expect(first.checks[0]?.erroring_since).toBe('2024-05-01T10:00:00.000Z');
    vi.setSystemTime(new Date('2024-05-01T10:01:00.000Z'));
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
