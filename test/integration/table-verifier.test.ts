import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TableSchema } from '../../src/core/change.js';
import { postgresComparison } from '../../src/sinks/postgres/comparison.js';
import { createPostgresSource } from '../../src/source/postgres/postgres-source.js';
import type { VerifyLimits } from '../../src/verify/table-verifier.js';
import { createDatabase } from '../support/pg-cluster.js';
import { sqlOn } from '../support/replication-fixture.js';
import { verifyTable } from '../support/verify-fixture.js';

const TABLES = `
  CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), at timestamptz, flag boolean, code char(5), data bytea);
  CREATE TABLE words (word text PRIMARY KEY, n integer);
  CREATE TABLE pairs (a integer, b text, v text, PRIMARY KEY (a, b));
  CREATE TABLE things (id uuid PRIMARY KEY, v integer);
`;

const SEED = `
  INSERT INTO items SELECT i, 'item ' || i, i * 1.5, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 second',
    i % 2 = 0, 'c' || (i % 100), decode(md5(i::text), 'hex') FROM generate_series(1, 30000) i;
  INSERT INTO words SELECT 'w' || i || CASE WHEN i % 3 = 0 THEN 'Z' ELSE 'a' END, i FROM generate_series(1, 3000) i;
  INSERT INTO pairs SELECT i % 50, 'b' || i, 'v' || i FROM generate_series(1, 3000) i;
  INSERT INTO things SELECT md5(i::text)::uuid, i FROM generate_series(1, 3000) i;
`;

describe('comparing a table between a PostgreSQL source and sink', () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  const prefix = `tv_${randomBytes(4).toString('hex')}`;
  let source: string;
  let sink: string;
  const shapes = new Map<string, TableSchema>();

  beforeAll(async () => {
    [source, sink] = await Promise.all([
      createDatabase(adminUrl, `${prefix}_src`),
      createDatabase(adminUrl, `${prefix}_dst`),
    ]);
    for (const url of [source, sink]) await sqlOn(url, TABLES + SEED);
    const src = createPostgresSource({ connectionString: source });
    await src.connect();
    const names = ['items', 'words', 'pairs', 'things'];
    const described = await src.describeTables(names.map((table) => ({ schema: 'public', table })));
    for (const shape of described) shapes.set(shape.table, shape);
    await src.close();
  });

  afterAll(async () => {
    await sqlOn(adminUrl, `DROP DATABASE IF EXISTS ${prefix}_src WITH (FORCE)`);
    await sqlOn(adminUrl, `DROP DATABASE IF EXISTS ${prefix}_dst WITH (FORCE)`);
  });

  const verify = (table: string, limits: Partial<VerifyLimits> = {}) =>
    verifyTable(
      source,
      postgresComparison({ connectionString: sink }, (t) => t),
      shapes.get(table) as TableSchema,
      limits,
    );

  it('finds equal tables equal, reading each side once', async () => {
    for (const t of ['items', 'words', 'pairs', 'things']) {
      const { verdict } = await verify(t);
      expect(verdict, t).toMatchObject({
        status: 'matched',
        missing: 0,
        extra: 0,
        changed: 0,
        columns_not_verified: [],
      });
      expect(verdict.source_rows).toBe(verdict.sink_rows);
    }
  });

  it('finds rows changed, deleted and added in the sink, by key', async () => {
    await sqlOn(
      sink,
      `UPDATE items SET price = price + 0.01 WHERE id IN (7, 15001);
      UPDATE items SET code = 'c7   ' WHERE id = 29999; DELETE FROM items WHERE id = 20000;
      INSERT INTO items (id, name) VALUES (40000, 'stray'); UPDATE items SET name = NULL WHERE id = 3;`,
    );
    const { verdict, keys } = await verify('items');
    expect(verdict).toMatchObject({ status: 'differs', missing: 1, extra: 1, changed: 4 });
    expect(keys.map((k) => k[0]).sort()).toEqual(['15001', '20000', '29999', '3', '40000', '7']);
    expect(verdict.sample_keys).toContainEqual({ kind: 'missing', key: { id: '20000' } });
  });

  it('says when more rows differ than it keeps, and keeps no keys, so a repair copies the table whole', async () => {
    const { verdict, keys, truncated } = await verify('items', { maxKeys: 3 });
    expect(verdict.status).toBe('differs');
    expect(verdict.reason).toMatch(/^more than 3 rows differ/);
    expect({ keys, truncated }).toEqual({ keys: [], truncated: true });
    expect((await verify('words')).truncated).toBe(false);
  });

  it('compares text, composite and uuid keys in one order at both sides', async () => {
    await sqlOn(
      sink,
      `UPDATE words SET n = -1 WHERE word = 'w3000Z'; DELETE FROM pairs WHERE a = 7 AND b = 'b1007';
      UPDATE things SET v = 0 WHERE id = md5('2500')::uuid;`,
    );
    expect((await verify('words')).keys).toEqual([['w3000Z']]);
    expect((await verify('pairs')).keys).toEqual([['7', 'b1007']]);
    expect((await verify('things')).keys).toEqual([
      [(await sqlOn(source, `SELECT md5('2500')::uuid::text AS u`))[0].u],
    ]);
  });
});
