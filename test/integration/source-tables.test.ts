import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationService } from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('GET /v1/connections/{name}/tables', () => {
  let service: TestService;

  beforeAll(async () => {
    ({ service } = await replicationService(
      cluster?.adminUrl as string,
      'source_tables',
      `CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders SELECT generate_series(1, 500); ANALYZE orders;
       CREATE TABLE notes (body text);
       CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY);
       CREATE SCHEMA sales; CREATE TABLE sales.leads (id int PRIMARY KEY);
       CREATE TABLE events (id int, at date, PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
       CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
       CREATE VIEW order_ids AS SELECT id FROM orders`,
    ));
    await service.request('POST', '/v1/connections', {
      name: 'down',
      type: 'postgres',
      dsn: 'postgres://u@127.0.0.1:1/down',
    });
  });
  afterAll(() => service?.stop());

  it('lists every table with whether it can be replicated, why not, and its row estimate', async () => {
    const res = await service.request('GET', '/v1/connections/src/tables');
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(res.body.map((t: { table: string }) => [t.table, t]));
    expect(Object.keys(byName)).toEqual([
      'public.events',
      'public.events_2026',
      'public.notes',
      'public.orders',
      'public.scratch',
      'sales.leads',
    ]);
    expect(byName['public.orders']).toEqual({
      table: 'public.orders',
      replicable: true,
      reason: null,
      estimated_rows: 500,
    });
    expect(byName['public.notes'].reason).toContain('has no primary key');
    expect(byName['public.scratch'].reason).toContain('unlogged');
    expect(byName['public.events'].reason).toContain('replicate its partitions instead');
    expect(byName['public.events_2026'].replicable).toBe(true);
  });

  it('answers 404 for an unknown connection and 502 for a source it cannot reach', async () => {
    expect((await service.request('GET', '/v1/connections/nope/tables')).body.code).toBe('NOT_FOUND');
    const down = await service.request('GET', '/v1/connections/down/tables');
    expect(down.status).toBe(502);
    expect(down.body.code).toBe('SOURCE_UNAVAILABLE');
    expect(down.body.error).toContain("cannot list the tables of 'down'");
  });
});
