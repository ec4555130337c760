import type { ColumnSchema, TableRef, TableSchema } from '../../core/change.js';
import type { CopyFormat } from '../../core/copy-binary.js';

/** Schema of the sink's own bookkeeping tables. */
export const BOOKKEEPING_SCHEMA = '_replicator';

/**
 * Quotes an identifier so that it names exactly `name`, whatever characters it holds: doubled
 * quotes inside double quotes, as `quote_ident` does. NUL cannot be part of an identifier.
 */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\0')) throw new Error(`invalid identifier ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"schema"."table"`. */
export const qualifiedName = (ref: TableRef): string => `${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`;

// What format_type can print: words, dots, quoted identifiers (doubled quotes inside), one level of
// typmod parentheses (where alone a comma may appear) and array brackets. Anything else (a
// semicolon, a comment, a second column after a comma) is not a type name.
const QUOTED_IDENT = /"(?:[^"\0]|"")+"/g;
const TYPE_NAME = /^(?:[A-Za-z0-9_$ .]|\([A-Za-z0-9_$ ,.]*\)|\[\d*\])+$/;

/** Returns the type name as SQL after checking it is one `format_type` could have produced. */
export function typeSql(typeName: string): string {
  if (!TYPE_NAME.test(typeName.replace(QUOTED_IDENT, 'q'))) {
    throw new Error(`invalid type name ${JSON.stringify(typeName)}`);
  }
  return typeName;
}

/** `CREATE SCHEMA IF NOT EXISTS`. */
export const createSchemaSql = (schema: string): string =>
  `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`;

/**
 * `CREATE TABLE IF NOT EXISTS` of the target of `source`: same columns, types, NOT NULL and, unless
 * `withKey` is false (it is then added once the snapshot is in), primary key.
 */
export function createTableSql(target: TableRef, source: TableSchema, withKey = true): string {
  if (source.keyColumns.length === 0) throw new Error(`${source.schema}.${source.table} has no key columns`);
  const columns = source.columns.map(
    (c) => `${quoteIdent(c.name)} ${typeSql(c.typeName)}${c.nullable && !c.isKey ? '' : ' NOT NULL'}`,
  );
  // The sink computes generated columns itself, as the source does: their values are not streamed.
  const generated = (source.generated ?? []).map(
    (g) => `${quoteIdent(g.name)} ${typeSql(g.typeName)} GENERATED ALWAYS AS (${g.expression}) STORED`,
  );
  const key = withKey ? [`PRIMARY KEY (${source.keyColumns.map(quoteIdent).join(', ')})`] : [];
  return `CREATE TABLE IF NOT EXISTS ${qualifiedName(target)} (\n  ${[...columns, ...generated, ...key].join(',\n  ')}\n)`;
}

/** `ALTER TABLE … ADD PRIMARY KEY`: one sorted build, as compact as an index can be. */
export const addPrimaryKeySql = (target: TableRef, keyColumns: readonly string[]): string =>
  `ALTER TABLE ${qualifiedName(target)} ADD PRIMARY KEY (${keyColumns.map(quoteIdent).join(', ')})`;

/** The bookkeeping tables by name, each with its idempotent DDL (the schema is `BOOKKEEPING_SCHEMA`). */
export function bookkeepingTablesSql(): { table: string; sql: string }[] {
  const s = quoteIdent(BOOKKEEPING_SCHEMA);
  return [
    {
      table: 'checkpoints',
      sql: `CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
  pipeline_id text PRIMARY KEY,
  lsn pg_lsn NOT NULL,
  epoch bigint NOT NULL,
  updated_at timestamptz
)`,
    },
    {
      table: 'snapshot_partitions',
      sql: `CREATE TABLE IF NOT EXISTS ${s}.snapshot_partitions (
  pipeline_id text,
  table_name text,
  partition_id text,
  rows bigint,
  done_at timestamptz,
  PRIMARY KEY (pipeline_id, table_name, partition_id)
)`,
    },
    {
      // Target tables created without their primary key, which is built once their snapshot is in.
      table: 'deferred_keys',
      sql: `CREATE TABLE IF NOT EXISTS ${s}.deferred_keys (
  pipeline_id text,
  target text,
  PRIMARY KEY (pipeline_id, target)
)`,
    },
  ];
}

/** `COPY target (cols) FROM STDIN` in text format, columns in source order. */
export const copyFromSql = (
  target: TableRef,
  columns: readonly ColumnSchema[],
  format: CopyFormat = 'text',
): string =>
  `COPY ${qualifiedName(target)} (${columns.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN${
    format === 'binary' ? ' (FORMAT binary)' : ''
  }`;

/** `unnest($1::text[], …) AS u(v1, …)` with `$first` as the first parameter number. */
function unnestSql(count: number, first = 1): string {
  const params = Array.from({ length: count }, (_, i) => `$${first + i}::text[]`);
  const names = Array.from({ length: count }, (_, i) => `v${i + 1}`);
  return `unnest(${params.join(', ')}) AS u(${names.join(', ')})`;
}

const cast = (i: number, c: ColumnSchema): string => `u.v${i + 1}::${typeSql(c.typeName)}`;

/**
 * Upsert of rows given as one text[] parameter per column (in `columns` order): values are cast to
 * their column types, existing rows get the given non-key columns. Keys must be unique in one call.
 */
export function upsertSql(
  target: TableRef,
  columns: readonly ColumnSchema[],
  keyColumns: readonly string[],
): string {
  const names = columns.map((c) => quoteIdent(c.name)).join(', ');
  const values = columns.map((c, i) => cast(i, c)).join(', ');
  const keys = new Set(keyColumns);
  const sets = columns
    .filter((c) => !keys.has(c.name))
    .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`);
  const action = sets.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${sets.join(', ')}`;
  return (
    `INSERT INTO ${qualifiedName(target)} AS t (${names}) SELECT ${values} FROM ${unnestSql(columns.length)} ` +
    `ON CONFLICT (${keyColumns.map(quoteIdent).join(', ')}) ${action}`
  );
}

/**
 * Update of existing rows only (never inserts), for row images that lack some columns. Parameters:
 * one text[] per column of `columns`, then one per `keyColumns` giving the key of the row to update
 * (which may differ from the new key in `columns`). Each key at most once per call.
 */
export function updateSql(
  target: TableRef,
  columns: readonly ColumnSchema[],
  keyColumns: readonly ColumnSchema[],
): string {
  const sets = columns.map((c, i) => `${quoteIdent(c.name)} = ${cast(i, c)}`);
  const where = keyColumns.map((c, i) => `t.${quoteIdent(c.name)} = ${cast(columns.length + i, c)}`);
  return (
    `UPDATE ${qualifiedName(target)} AS t SET ${sets.join(', ')} ` +
    `FROM ${unnestSql(columns.length + keyColumns.length)} WHERE ${where.join(' AND ')}`
  );
}

/** Delete of the rows whose keys are given as one text[] parameter per key column. */
export function deleteSql(target: TableRef, keyColumns: readonly ColumnSchema[]): string {
  const names = keyColumns.map((c) => quoteIdent(c.name)).join(', ');
  const values = keyColumns.map((c, i) => cast(i, c)).join(', ');
  return (
    `DELETE FROM ${qualifiedName(target)} WHERE (${names}) IN ` +
    `(SELECT ${values} FROM ${unnestSql(keyColumns.length)})`
  );
}

/** `TRUNCATE` of several targets in one statement. */
export const truncateSql = (targets: readonly TableRef[]): string =>
  `TRUNCATE ${targets.map(qualifiedName).join(', ')}`;
