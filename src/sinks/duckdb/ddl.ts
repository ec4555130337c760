import type { TableRef } from '../../core/change.js';
import type { DuckdbColumn } from './column-types.js';
import { BOOKKEEPING_SCHEMA } from './config.js';

/** Quotes an identifier, doubling quotes inside, so that it names exactly `name`. */
export function quoteIdent(name: string): string {
  if (name === '' || name.includes('\u0000'))
    throw new Error('an empty name or a NUL cannot be a DuckDB identifier');
  return `"${name.replaceAll('"', '""')}"`;
}

/** A SQL string literal. */
export const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

export const qualifiedName = (ref: TableRef): string => `${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`;

export const CHECKPOINTS = `${quoteIdent(BOOKKEEPING_SCHEMA)}.checkpoints`;
export const PARTITIONS = `${quoteIdent(BOOKKEEPING_SCHEMA)}.snapshot_partitions`;

/** The bookkeeping schema and tables, idempotent. */
export const BOOKKEEPING_SQL = [
  `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(BOOKKEEPING_SCHEMA)}`,
  // One row per pipeline: its last durable position and the fencing epoch of its writer.
  `CREATE TABLE IF NOT EXISTS ${CHECKPOINTS} (
  pipeline_id VARCHAR PRIMARY KEY,
  lsn VARCHAR NOT NULL,
  epoch BIGINT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS ${PARTITIONS} (
  pipeline_id VARCHAR NOT NULL,
  table_name VARCHAR NOT NULL,
  partition_id VARCHAR NOT NULL,
  row_count BIGINT NOT NULL,
  done_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (pipeline_id, table_name, partition_id)
)`,
];

/** A column definition: its DuckDB type, NOT NULL when the source says so or it is a key. */
export const columnSql = (column: DuckdbColumn, notNull: boolean): string =>
  `${quoteIdent(column.name)} ${column.type}${notNull ? ' NOT NULL' : ''}`;

/** `CREATE TABLE IF NOT EXISTS` of a target with its primary key. */
export function createTableSql(
  target: TableRef,
  columns: readonly { column: DuckdbColumn; notNull: boolean }[],
  keyColumns: readonly string[],
  ifNotExists = true,
): string {
  const defs = columns.map((c) => columnSql(c.column, c.notNull));
  const key = `PRIMARY KEY (${keyColumns.map(quoteIdent).join(', ')})`;
  return `CREATE TABLE ${ifNotExists ? 'IF NOT EXISTS ' : ''}${qualifiedName(target)} (\n  ${[...defs, key].join(',\n  ')}\n)`;
}
