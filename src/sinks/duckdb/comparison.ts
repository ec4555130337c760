import type { ColumnSchema, TableRef } from '../../core/change.js';
import type {
  ComparedKey,
  ComparedValue,
  ComparisonDialect,
  ComparisonReader,
  NotCompared,
  SinkComparison,
} from '../../core/table-comparison.js';
import { duckdbColumnOf } from './column-types.js';
import { qualifiedName, quoteIdent, quoteLiteral } from './ddl.js';
import { acquireInstance, releaseInstance } from './instances.js';

/** DuckDB's side of a comparison. */
export const duckdbComparisonDialect: ComparisonDialect = {
  table: (ref) => qualifiedName(ref),
  ident: (name) => quoteIdent(name),
  tagged: (column, value) => `CASE WHEN ${column} IS NULL THEN 'N' ELSE 'V' || ${value} END`,
  rowMd5: (parts) => `md5(concat_ws(chr(31), ${parts.join(', ')}))`,
  md5Prefix: (md5) => `('0x' || substr(${md5}, 1, 15))::BIGINT`,
};

const INTEGER = /^(?:SMALLINT|INTEGER|BIGINT)$/;
const DECIMAL = /^DECIMAL\(\d+,\d+\)$/;

/** DuckDB prints a BC date `0044-03-15 (BC)`, PostgreSQL `0044-03-15 BC`. */
const dateText = (c: string) => `replace(CAST(${c} AS VARCHAR), ' (BC)', ' BC')`;

/**
 * DuckDB prints a TIME's fraction only as long as it needs; padded to six digits. Not through a
 * timestamp: `24:00:00`, which PostgreSQL keeps, would wrap to `00:00:00`.
 */
const timeText = (c: string) => {
  const text = `CAST(${c} AS VARCHAR)`;
  return `rpad(CASE WHEN contains(${text}, '.') THEN ${text} ELSE ${text} || '.' END, 15, '0')`;
};

/** How a stored value of a source column compares, from the DuckDB type the sink gives it. */
export function duckdbComparedValue(column: ColumnSchema): ComparedValue | NotCompared {
  const c = quoteIdent(column.name);
  const { type } = duckdbColumnOf(column);
  if (INTEGER.test(type) || DECIMAL.test(type) || type === 'UUID' || type === 'JSON')
    // DECIMAL prints its scale, UUID in lower case, JSON as the text written: as the source prints them.
    return { form: 'text', sql: `CAST(${c} AS VARCHAR)` };
  switch (type) {
    case 'VARCHAR':
      return { form: 'text', sql: c };
    case 'BOOLEAN':
      return { form: 'bool01', sql: `CASE WHEN ${c} THEN '1' ELSE '0' END` };
    case 'BLOB':
      return { form: 'hex', sql: `lower(hex(${c}))` };
    case 'DATE':
      return { form: 'text', sql: dateText(c) };
    case 'TIME':
      return { form: 'time_us', sql: timeText(c) };
    case 'TIMESTAMP':
      return { form: 'timestamp_us', sql: `strftime(${c}, '%Y-%m-%d %H:%M:%S.%f')` };
    case 'TIMESTAMPTZ':
      // In UTC whatever the session's TimeZone.
      return { form: 'timestamp_us', sql: `strftime(${c} AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f')` };
    case 'FLOAT':
    case 'DOUBLE':
      return { reason: 'floating-point values are spelled differently by DuckDB and PostgreSQL' };
    case 'TIMETZ':
      return { reason: 'DuckDB keeps a time with time zone by its UTC instant, not its offset as written' };
    case 'INTERVAL':
      return {
        reason: 'DuckDB keeps an interval as months, days and microseconds, spelled unlike PostgreSQL',
      };
  }
  return { reason: `a DuckDB ${type} column has no text spelled as the source's` };
}

/** Source types whose order at the source (`COLLATE "C"`) is the byte order of their text. */
const TEXT_KEY = /^(?:text|name|character varying(?:\(\d+\))?)$/;

/** How a key column compares, in the order the source's keys have. */
export function duckdbComparedKey(column: ColumnSchema): ComparedKey | NotCompared {
  const c = quoteIdent(column.name);
  const { type } = duckdbColumnOf(column);
  const typed = (sql: string, cast: string): ComparedKey => ({
    sql,
    order: c,
    literal: (text) => `CAST(${quoteLiteral(text)} AS ${cast})`,
  });
  if (INTEGER.test(type)) {
    return { sql: `CAST(${c} AS VARCHAR)`, order: c, literal: (text) => integerLiteral(text, column.name) };
  }
  // A UUID orders as its lower-case text, as PostgreSQL's uuid does.
  if (DECIMAL.test(type) || type === 'UUID') return typed(`CAST(${c} AS VARCHAR)`, type);
  if (type === 'DATE') return typed(dateText(c), 'DATE');
  // DuckDB compares VARCHAR byte by byte (its default collation is binary).
  if (type === 'VARCHAR' && TEXT_KEY.test(column.typeName)) {
    return { sql: c, order: c, literal: (text) => quoteLiteral(text) };
  }
  if (column.typeName.startsWith('character(')) {
    return { reason: 'character(n) keys are ordered without their padding at the source, with it in DuckDB' };
  }
  return { reason: `a ${column.typeName} key has no order shared by DuckDB and PostgreSQL` };
}

function integerLiteral(text: string, column: string): string {
  if (!/^-?\d+$/.test(text)) {
    throw new Error(`key column ${JSON.stringify(column)}: ${JSON.stringify(text)} is not an integer`);
  }
  return text;
}

/** A value read back as text: integers too wide for a number (BIGINT, HUGEINT) in full. */
function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return String(value);
}

/**
 * A DuckDB sink keeps most columns in a DuckDB type (see `column-types.ts`): each is printed in a
 * form both sides spell alike, or listed as not verified. It reads through the sink's own
 * instance (one process cannot open the file twice), on a connection of its own.
 */
export function duckdbComparison(path: string, target: (table: TableRef) => TableRef): SinkComparison {
  return {
    dialect: duckdbComparisonDialect,
    target,
    column: duckdbComparedValue,
    key: duckdbComparedKey,
    open: async () => {
      const instance = await acquireInstance(path);
      let conn: Awaited<ReturnType<typeof instance.connect>>;
      try {
        conn = await instance.connect();
      } catch (error) {
        await releaseInstance(path);
        throw error;
      }
      let closed = false;
      return {
        query: async (sql) => {
          const reader = await conn.runAndReadAll(sql);
          return reader.getRowsJS().map((row) => row.map(text));
        },
        close: async () => {
          if (closed) return;
          closed = true;
          conn.closeSync();
          await releaseInstance(path);
        },
      } satisfies ComparisonReader;
    },
  };
}
