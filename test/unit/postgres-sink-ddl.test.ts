import { describe, expect, it } from 'vitest';
import type { ColumnSchema, TableSchema } from '../../src/core/change.js';
import {
  addPrimaryKeySql,
  bookkeepingTablesSql,
  copyFromSql,
  createSchemaSql,
  createTableSql,
  deleteSql,
  qualifiedName,
  quoteIdent,
  truncateSql,
  typeSql,
  updateSql,
  upsertSql,
} from '../../src/sinks/postgres/ddl.js';
import { col } from '../support/table-schemas.js';

const orders: TableSchema = {
  schema: 'public',
  table: 'orders',
  columns: [
    col('id', 'bigint', { isKey: true, nullable: false }),
    col('region', 'text', { isKey: true, nullable: false }),
    col('total', 'numeric(12,2)', { nullable: false }),
    col('tags', 'text[]'),
  ],
  keyColumns: ['region', 'id'],
};

describe('identifier quoting', () => {
  it.each([
    ['plain', '"plain"'],
    ['MixedCase', '"MixedCase"'],
    ['a"; DROP TABLE x;--', '"a""; DROP TABLE x;--"'],
    ['""', '""""""'],
    ['with space', '"with space"'],
    ['ünï', '"ünï"'],
  ])('quotes %j', (name, quoted) => expect(quoteIdent(name)).toBe(quoted));

  it.each(['', 'a\0b'])('refuses %j', (name) => expect(() => quoteIdent(name)).toThrow(/invalid identifier/));

  it('qualifies', () => expect(qualifiedName({ schema: 's"x', table: 't.y' })).toBe('"s""x"."t.y"'));
});

describe('type names', () => {
  it.each([
    'integer',
    'numeric(12,2)',
    'timestamp(3) with time zone',
    'character varying(20)[]',
    'interval day to second(3)',
    '"char"',
    'public."My ""odd"" type"[]',
    'bit varying(5)',
    'geometry(PointZ,4326)',
    'numeric(12,2)[]',
  ])('accepts %j', (name) => expect(typeSql(name)).toBe(name));

  it.each([
    'int; DROP TABLE x',
    'int -- x',
    "text'",
    'int/*',
    '"unterminated',
    '',
    'integer, "x" text',
    'numeric((1))',
    'int) , (x',
    'int(--x)',
  ])('refuses %j', (name) => expect(() => typeSql(name)).toThrow(/invalid type name/));
});

describe('DDL', () => {
  it('creates a schema', () => expect(createSchemaSql('re"p')).toBe('CREATE SCHEMA IF NOT EXISTS "re""p"'));

  it('creates a table with types, NOT NULL and the primary key in key order', () => {
    expect(createTableSql({ schema: 'replica', table: 'orders' }, orders)).toBe(
      [
        'CREATE TABLE IF NOT EXISTS "replica"."orders" (',
        '  "id" bigint NOT NULL,',
        '  "region" text NOT NULL,',
        '  "total" numeric(12,2) NOT NULL,',
        '  "tags" text[],',
        '  PRIMARY KEY ("region", "id")',
        ')',
      ].join('\n'),
    );
  });

  it('refuses a table without key', () => {
    expect(() => createTableSql({ schema: 's', table: 't' }, { ...orders, keyColumns: [] })).toThrow(
      /no key/,
    );
  });

  it('creates the bookkeeping tables', () => {
    const tables = bookkeepingTablesSql();
    expect(tables.map((t) => t.table)).toEqual(['checkpoints', 'snapshot_partitions', 'deferred_keys']);
    const sql = tables.map((t) => t.sql).join(';\n');
    expect(sql).toContain('CREATE TABLE IF NOT EXISTS "_replicator".checkpoints (');
    expect(sql).toContain('lsn pg_lsn NOT NULL');
    expect(sql).toContain('PRIMARY KEY (pipeline_id, table_name, partition_id)');
    expect(sql).toContain('PRIMARY KEY (pipeline_id, target)');
  });

  it('creates a table without its key when asked, and adds the key after', () => {
    const source = {
      schema: 'a',
      table: 'b',
      columns: [
        { name: 'id', typeName: 'integer', typeOid: 23, nullable: false, isKey: true },
        { name: 'v', typeName: 'text', typeOid: 25, nullable: true, isKey: false },
      ],
      keyColumns: ['id'],
    };
    const target = { schema: 'r', table: 'we"ird' };
    expect(createTableSql(target, source, false)).toBe(
      'CREATE TABLE IF NOT EXISTS "r"."we""ird" (\n  "id" integer NOT NULL,\n  "v" text\n)',
    );
    expect(createTableSql(target, source)).toContain('PRIMARY KEY ("id")');
    expect(addPrimaryKeySql(target, ['id', 'v'])).toBe(
      'ALTER TABLE "r"."we""ird" ADD PRIMARY KEY ("id", "v")',
    );
  });
});

describe('DML', () => {
  const target = { schema: 'r', table: 'o' };

  it('copies the columns in source order', () => {
    expect(copyFromSql(target, orders.columns)).toBe(
      'COPY "r"."o" ("id", "region", "total", "tags") FROM STDIN',
    );
  });

  it('upserts from one text[] per column, cast to the column type', () => {
    expect(upsertSql(target, orders.columns, orders.keyColumns)).toBe(
      'INSERT INTO "r"."o" AS t ("id", "region", "total", "tags") ' +
        'SELECT u.v1::bigint, u.v2::text, u.v3::numeric(12,2), u.v4::text[] ' +
        'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(v1, v2, v3, v4) ' +
        'ON CONFLICT ("region", "id") DO UPDATE SET "total" = EXCLUDED."total", "tags" = EXCLUDED."tags"',
    );
  });

  it('does nothing on conflict when every column is a key column', () => {
    const keys = orders.columns.slice(0, 2);
    expect(upsertSql(target, keys, ['id', 'region'])).toMatch(/ON CONFLICT \("id", "region"\) DO NOTHING$/);
  });

  it('updates only the given columns, addressed by the trailing key parameters', () => {
    const [id, region, total] = orders.columns as [ColumnSchema, ColumnSchema, ColumnSchema];
    expect(updateSql(target, [id, total], [region, id])).toBe(
      'UPDATE "r"."o" AS t SET "id" = u.v1::bigint, "total" = u.v2::numeric(12,2) ' +
        'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(v1, v2, v3, v4) ' +
        'WHERE t."region" = u.v3::text AND t."id" = u.v4::bigint',
    );
  });

  it('deletes by keys', () => {
    const [id, region] = orders.columns as [ColumnSchema, ColumnSchema];
    expect(deleteSql(target, [region, id])).toBe(
      'DELETE FROM "r"."o" WHERE ("region", "id") IN ' +
        '(SELECT u.v1::text, u.v2::bigint FROM unnest($1::text[], $2::text[]) AS u(v1, v2))',
    );
  });

  it('truncates several tables at once', () => {
    expect(truncateSql([target, { schema: 'a', table: 'b"c' }])).toBe('TRUNCATE "r"."o", "a"."b""c"');
  });

  it('quotes hostile column names everywhere', () => {
    const hostile = col('a"; DROP TABLE x;--', 'int', { isKey: true });
    const sql = [
      upsertSql(target, [hostile], [hostile.name]),
      deleteSql(target, [hostile]),
      copyFromSql(target, [hostile]),
    ].join('\n');
    expect(sql.match(/"a""; DROP TABLE x;--"/g)).toHaveLength(4);
    expect(sql).not.toMatch(/[^"]"; DROP/);
  });
});
