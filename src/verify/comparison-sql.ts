import type { ColumnSchema, TableRef, TableSchema } from '../core/change.js';
import type { ComparedKey, ComparisonDialect } from '../core/table-comparison.js';

/** A key range: rows with lower <= key < upper, each bound the key's values as source text (null: open). */
export interface KeyRange {
  lower: string[] | null;
  upper: string[] | null;
}

export const WHOLE_TABLE: KeyRange = { lower: null, upper: null };

/** One side of a table's comparison, as SQL: the table, its compared values and its key. */
export interface ComparedTable {
  dialect: ComparisonDialect;
  target: TableRef;
  /** The null-tagged value of every compared column, in the compared columns' order. */
  values: string[];
  keys: ComparedKey[];
}

/** Builds a side's ComparedTable from the expressions of its compared columns. */
export function comparedTable(
  dialect: ComparisonDialect,
  target: TableRef,
  columns: readonly { column: ColumnSchema; sql: string }[],
  keys: ComparedKey[],
): ComparedTable {
  return {
    dialect,
    target,
    values: columns.map(({ column, sql }) => dialect.tagged(dialect.ident(column.name), sql)),
    keys,
  };
}

/** The source's key columns in key order. */
export function keyColumnsOf(table: TableSchema): ColumnSchema[] {
  return table.keyColumns.map((name) => {
    const column = table.columns.find((c) => c.name === name);
    if (!column) throw new Error(`key column ${name} of ${table.schema}.${table.table} not found`);
    return column;
  });
}

/** `key >= lower` in key order (lexicographic over the key's columns). */
function atOrAfter(keys: readonly ComparedKey[], bound: readonly string[], i = 0): string {
  const k = keys[i] as ComparedKey;
  const value = k.literal(bound[i] as string);
  if (i === keys.length - 1) return `${k.order} >= ${value}`;
  return `(${k.order} > ${value} OR (${k.order} = ${value} AND ${atOrAfter(keys, bound, i + 1)}))`;
}

/** `key < upper` in key order. */
function before(keys: readonly ComparedKey[], bound: readonly string[], i = 0): string {
  const k = keys[i] as ComparedKey;
  const value = k.literal(bound[i] as string);
  if (i === keys.length - 1) return `${k.order} < ${value}`;
  return `(${k.order} < ${value} OR (${k.order} = ${value} AND ${before(keys, bound, i + 1)}))`;
}

/** The WHERE condition of a range; the first key column is bounded on its own so an index serves it. */
export function rangeCondition(side: ComparedTable, range: KeyRange): string {
  const first = side.keys[0] as ComparedKey;
  const conditions: string[] = [];
  if (range.lower) {
    if (side.keys.length > 1) conditions.push(`${first.order} >= ${first.literal(range.lower[0] as string)}`);
    conditions.push(atOrAfter(side.keys, range.lower));
  }
  if (range.upper) {
    if (side.keys.length > 1) conditions.push(`${first.order} <= ${first.literal(range.upper[0] as string)}`);
    conditions.push(before(side.keys, range.upper));
  }
  return conditions.length > 0 ? conditions.join(' AND ') : 'TRUE';
}

/** The WHERE condition matching exactly these keys (each the key's values as source text). */
export function keysCondition(side: ComparedTable, keys: readonly string[][]): string {
  if (keys.length === 0) return 'FALSE';
  if (side.keys.length === 1) {
    const k = side.keys[0] as ComparedKey;
    return `${k.order} IN (${keys.map((key) => k.literal(key[0] as string)).join(', ')})`;
  }
  return keys
    .map((key) => `(${side.keys.map((k, i) => `${k.order} = ${k.literal(key[i] as string)}`).join(' AND ')})`)
    .join(' OR ');
}

/** Rows and the sum of their hashes' prefixes, of the rows matching `where`. */
export function checksumSql(side: ComparedTable, where: string): string {
  const { dialect } = side;
  const hash = dialect.md5Prefix(dialect.rowMd5(side.values));
  return `SELECT count(*), sum(${hash}) FROM ${dialect.table(side.target)} WHERE ${where}`;
}

/** Each matching row's key values (text) and its hash. */
export function rowHashesSql(side: ComparedTable, where: string): string {
  const { dialect } = side;
  const keys = side.keys.map((k) => k.sql).join(', ');
  return `SELECT ${keys}, ${dialect.rowMd5(side.values)} FROM ${dialect.table(side.target)} WHERE ${where}`;
}

/**
 * Key values cutting the rows matching `where` into about `parts` ranges of equal size: every
 * n-th key in key order (window functions: PostgreSQL, MySQL 8, MariaDB 10.2, DuckDB). `from`
 * may carry a sampling clause after the table.
 */
export function splitPointsSql(side: ComparedTable, where: string, parts: number, sample = ''): string {
  const { dialect, keys } = side;
  const names = keys.map((_, i) => `k${i}`);
  return `SELECT ${names.join(', ')} FROM (
    SELECT ${keys.map((k, i) => `${k.sql} AS k${i}`).join(', ')},
           row_number() OVER (ORDER BY ${keys.map((k) => k.order).join(', ')}) AS rn, count(*) OVER () AS n
      FROM ${dialect.table(side.target)}${sample} WHERE ${where}) r
    WHERE floor(rn * ${parts} / n) <> floor((rn - 1) * ${parts} / n) AND rn < n ORDER BY rn`;
}
