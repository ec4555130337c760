import { describe, expect, it } from 'vitest';
import { sharedTarget, type TargetWriter } from '../../src/pipelines/shared-targets.js';

const connections: Record<string, { type: string; dsn: string }> = {
  wh: { type: 'duckdb', dsn: 'duckdb:shared.duckdb' },
  other_wh: { type: 'duckdb', dsn: 'duckdb:other.duckdb' },
  shop: { type: 'mysql', dsn: 'mysql://u@db.example:3306/shop' },
  shop_again: { type: 'mysql', dsn: 'mysql://u@db.example:3306/shop?sslmode=require' },
  queue: { type: 'redis', dsn: 'redis://cache.example:6379/0' },
};
const connectionOf = (name: string) => connections[name];
const writer = (
  name: string,
  sinkConnection: string,
  sinkProperties: Record<string, string> = {},
): TargetWriter => ({
  name,
  sinkConnection,
  sinkProperties,
  sourceTables: ['public.orders'],
});

describe('sharedTarget', () => {
  it('finds two pipelines writing one DuckDB table, names compared case-insensitively', () => {
    const shared = sharedTarget(
      [writer('b', 'wh', { table_id: 'Public.ORDERS' })],
      [writer('a', 'wh', { table_id: 'public.orders' })],
      connectionOf,
    );
    expect(shared).toEqual({
      candidate: 'b',
      message: expect.stringContaining(
        "pipelines 'a' and 'b' would both write Public.ORDERS on connection 'wh'",
      ),
    });
  });

  it('tells apart another file, another target and a sink that writes no tables', () => {
    expect(sharedTarget([writer('b', 'other_wh')], [writer('a', 'wh')], connectionOf)).toBeUndefined();
    expect(
      sharedTarget([writer('b', 'wh', { table_id: 'copies.{table}' })], [writer('a', 'wh')], connectionOf),
    ).toBeUndefined();
    expect(sharedTarget([writer('b', 'queue')], [writer('a', 'queue')], connectionOf)).toBeUndefined();
  });

  it("resolves a MySQL target's database from the DSN, across connections to one endpoint", () => {
    const shared = sharedTarget(
      [writer('b', 'shop_again', { target_database: 'shop' })],
      [writer('a', 'shop')],
      connectionOf,
    );
    expect(shared?.message).toContain("pipelines 'a' and 'b' would both write shop.orders");
    expect(shared?.message).toContain("connections 'shop' and 'shop_again'");
  });

  it('compares the candidates with each other too', () => {
    expect(sharedTarget([writer('a', 'wh'), writer('b', 'wh')], [], connectionOf)?.candidate).toBe('b');
  });
});
