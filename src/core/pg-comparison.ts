import pg from 'pg';
import type { ColumnSchema, TableRef } from './change.js';
import type { CanonicalForm, ComparedKey, ComparisonDialect, ComparisonReader } from './table-comparison.js';

/**
 * Session settings that fix the text PostgreSQL prints dates, intervals and floats in, whatever the
 * server's defaults: the change stream's, and a comparison's on either side.
 */
export const PG_TEXT_SESSION_OPTIONS =
  '-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c TimeZone=UTC';

/** PostgreSQL's side of a comparison, for the source and for a PostgreSQL sink alike. */
export const pgComparisonDialect: ComparisonDialect = {
  table: (ref: TableRef) => `${pg.escapeIdentifier(ref.schema)}.${pg.escapeIdentifier(ref.table)}`,
  ident: (name: string) => pg.escapeIdentifier(name),
  tagged: (column, value) => `CASE WHEN ${column} IS NULL THEN 'N' ELSE 'V' || ${value} END`,
  rowMd5: (parts) => `md5(concat_ws(chr(31), ${parts.join(', ')}))`,
  md5Prefix: (md5) => `('x' || substr(${md5}, 1, 15))::bit(60)::bigint`,
};

/** Types whose order depends on a collation: compared byte by byte (`"C"`), as binary-collated sinks order them. */
const COLLATABLE = /^(?:text|name|citext|character varying(?:\(\d+\))?|character(?:\(\d+\))?)$/;

const isCollatable = (typeName: string): boolean => COLLATABLE.test(typeName);

/**
 * A PostgreSQL value spelled in `form`. `concat` prints a value with its type's output function,
 * as the change stream does: `char(n)` keeps its padding, where a cast to text would drop it.
 */
export function pgFormSql(form: CanonicalForm, column: Pick<ColumnSchema, 'name' | 'typeName'>): string {
  const c = pg.escapeIdentifier(column.name);
  switch (form) {
    case 'text':
      return `concat(${c})`;
    case 'bool01':
      return `CASE WHEN ${c} THEN '1' ELSE '0' END`;
    case 'hex':
      return `encode(${c}, 'hex')`;
    case 'time_us':
      return `to_char(${c}::interval, 'HH24:MI:SS.US')`;
    case 'timestamp_us':
      return /with time zone/.test(column.typeName)
        ? `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`
        : `to_char(${c}, 'YYYY-MM-DD HH24:MI:SS.US')`;
  }
}

/** A PostgreSQL key column, ordered byte by byte when its type has a collation. */
export function pgComparedKey(column: Pick<ColumnSchema, 'name' | 'typeName'>): ComparedKey {
  const c = pg.escapeIdentifier(column.name);
  const collated = isCollatable(column.typeName);
  return {
    sql: `concat(${c})`,
    order: collated ? `${c} COLLATE "C"` : c,
    literal: (text) => `${pg.escapeLiteral(text)}::${column.typeName}${collated ? ' COLLATE "C"' : ''}`,
  };
}

/** A comparison session on a PostgreSQL client; every value read as text. */
export function pgComparisonReader(client: pg.ClientBase, close: () => Promise<void>): ComparisonReader {
  return {
    query: async (sql) => {
      const result = await client.query<string[]>({ text: sql, rowMode: 'array', types: TEXT_TYPES });
      return result.rows as (string | null)[][];
    },
    close,
  };
}

/** Every value parsed as the text the server sent. */
const TEXT_TYPES = { getTypeParser: () => (value: string) => value };
