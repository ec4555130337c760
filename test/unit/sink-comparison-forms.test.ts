import { describe, expect, it } from 'vitest';
import type { ColumnSchema } from '../../src/core/change.js';
import { notCompared } from '../../src/core/table-comparison.js';
import { duckdbComparedKey, duckdbComparedValue } from '../../src/sinks/duckdb/comparison.js';
import { mysqlComparedKey, mysqlComparedValue } from '../../src/sinks/mysql/comparison.js';

const column = (typeName: string, isKey = false): ColumnSchema => ({
  name: 'c',
  typeName,
  typeOid: 0,
  nullable: !isKey,
  isKey,
});

const MARIADB = { mariadb: true, padding: false };
const MYSQL = { mariadb: false, padding: false };

describe('mysql comparison forms', () => {
  it.each([
    ['bigint', 'text'],
    ['numeric(12,2)', 'text'],
    ['numeric', 'text'],
    ['boolean', 'bool01'],
    ['bytea', 'hex'],
    ['date', 'text'],
    ['time(3) without time zone', 'time_us'],
    ['timestamp with time zone', 'timestamp_us'],
    ['uuid', 'text'],
    ['character(5)', 'text'],
    ['integer[]', 'text'],
    ['jsonb', 'text'],
  ])('%s compares as %s', (type, form) => {
    expect(mysqlComparedValue(column(type), MARIADB)).toMatchObject({ form });
  });

  it('lists floats, and JSON on MySQL proper, as not verified', () => {
    expect(notCompared(mysqlComparedValue(column('double precision'), MARIADB))).toBe(true);
    expect(notCompared(mysqlComparedValue(column('real'), MARIADB))).toBe(true);
    expect(notCompared(mysqlComparedValue(column('jsonb'), MYSQL))).toBe(true);
  });

  it('orders text keys by bytes, through BINARY when the collation pads', () => {
    expect(mysqlComparedKey(column('text', true), MARIADB)).toMatchObject({ order: '`c`' });
    const padded = mysqlComparedKey(column('text', true), { mariadb: false, padding: true });
    expect(padded).toMatchObject({ order: 'CAST(`c` AS BINARY)' });
    expect(notCompared(padded) ? '' : padded.literal("a'b")).toBe("CAST('a\\'b' AS BINARY)");
  });

  it('refuses keys without a shared order, and integer literals that are not integers', () => {
    for (const type of ['character(5)', 'double precision', 'timestamp with time zone', 'jsonb', 'citext'])
      expect(notCompared(mysqlComparedKey(column(type, true), MARIADB)), type).toBe(true);
    const key = mysqlComparedKey(column('bigint', true), MARIADB);
    expect(() => !notCompared(key) && key.literal('1 OR 1=1')).toThrow(/not an integer/);
    const decimal = mysqlComparedKey(column('numeric(12,2)', true), MARIADB);
    expect(notCompared(decimal) ? '' : decimal.literal('-7.50')).toBe("CAST('-7.50' AS DECIMAL(12,2))");
  });
});

describe('duckdb comparison forms', () => {
  it.each([
    ['bigint', 'text'],
    ['numeric(12,2)', 'text'],
    ['boolean', 'bool01'],
    ['bytea', 'hex'],
    ['date', 'text'],
    ['time without time zone', 'time_us'],
    ['timestamp with time zone', 'timestamp_us'],
    ['uuid', 'text'],
    ['jsonb', 'text'],
    ['numeric[]', 'text'],
  ])('%s compares as %s', (type, form) => {
    expect(duckdbComparedValue(column(type))).toMatchObject({ form });
  });

  it('lists floats, TIMETZ, INTERVAL and LISTs as not verified', () => {
    for (const type of ['double precision', 'real', 'time with time zone', 'interval', 'integer[]'])
      expect(notCompared(duckdbComparedValue(column(type))), type).toBe(true);
  });

  it('refuses keys without a shared order', () => {
    for (const type of ['character(5)', 'double precision', 'interval', 'jsonb', 'citext'])
      expect(notCompared(duckdbComparedKey(column(type, true))), type).toBe(true);
    for (const type of ['bigint', 'uuid', 'text', 'character varying(20)', 'date', 'numeric(10,2)'])
      expect(notCompared(duckdbComparedKey(column(type, true))), type).toBe(false);
  });
});
