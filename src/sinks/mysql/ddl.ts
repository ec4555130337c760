import type { ColumnSchema, TableRef, TableSchema } from '../../core/change.js';
import { mysqlCanName, mysqlTypeOf } from './column-types.js';
import { duplicateKeyUpdate, type UpsertStyle } from './server-dialect.js';

/** The sink's own tables, in the target database next to the targets. */
export const CHECKPOINTS_TABLE = '_replicator_checkpoints';
export const PARTITIONS_TABLE = '_replicator_snapshot_partitions';
export const BOOKKEEPING_TABLES = [CHECKPOINTS_TABLE, PARTITIONS_TABLE] as const;

/**
 * Quotes an identifier with backticks, doubling those inside, so that it names exactly `name`.
 * MySQL refuses NUL, characters beyond the Basic Multilingual Plane, a trailing space and more
 * than 64 characters in a name: such a name is refused here, clearly, before the server does.
 */
export function quoteIdent(name: string): string {
  if (!mysqlCanName(name)) {
    throw new Error(
      `${JSON.stringify(name)} cannot be a MySQL identifier (1 to 64 characters, no NUL, no trailing space)`,
    );
  }
  return `\`${name.replaceAll('`', '``')}\``;
}

/** `` `database`.`table` ``. */
export const qualifiedName = (ref: TableRef): string => `${quoteIdent(ref.schema)}.${quoteIdent(ref.table)}`;

/** Table options of every table the sink creates: utf8mb4, compared byte for byte (see `binaryCollation`). */
const tableOptions = (collation: string) => `ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${collation}`;

/**
 * The binary utf8mb4 collation that does not pad (MariaDB's `utf8mb4_nopad_bin`, MySQL 8's
 * `utf8mb4_0900_bin`), else `utf8mb4_bin`: keys `a`, `A` and `a ` are three rows at the source,
 * and must not be one row in the sink. Chosen from what the server has.
 */
export const COLLATION_CHOICES = ['utf8mb4_nopad_bin', 'utf8mb4_0900_bin', 'utf8mb4_bin'] as const;

export const createDatabaseSql = (database: string): string =>
  `CREATE DATABASE IF NOT EXISTS ${quoteIdent(database)} CHARACTER SET utf8mb4`;

/** The column definition of a source column: its mapped type, NOT NULL for keys and NOT NULL columns. */
export const columnSql = (column: Pick<ColumnSchema, 'name' | 'typeName' | 'isKey' | 'nullable'>): string =>
  `${quoteIdent(column.name)} ${mysqlTypeOf(column)}${column.nullable && !column.isKey ? ' NULL' : ' NOT NULL'}`;

/**
 * `CREATE TABLE IF NOT EXISTS` of the target of `source`: its columns with their mapped types, the
 * `generated` column definitions (see generated-columns.ts) and its primary key.
 */
export function createTableSql(
  target: TableRef,
  source: TableSchema,
  collation: string,
  generated: readonly string[] = [],
): string {
  if (source.keyColumns.length === 0) throw new Error(`${source.schema}.${source.table} has no key columns`);
  const columns = source.columns.map((c) => columnSql({ ...c, isKey: source.keyColumns.includes(c.name) }));
  const key = `PRIMARY KEY (${source.keyColumns.map(quoteIdent).join(', ')})`;
  return `CREATE TABLE IF NOT EXISTS ${qualifiedName(target)} (\n  ${[...columns, ...generated, key].join(',\n  ')}\n) ${tableOptions(collation)}`;
}

/** The bookkeeping tables of `database`, each with its idempotent DDL. */
export function bookkeepingTablesSql(database: string, collation: string): { table: string; sql: string }[] {
  const at = (table: string) => qualifiedName({ schema: database, table });
  return [
    {
      // One row per pipeline: its last durable position (NULL until a batch is applied) and fencing epoch.
      table: CHECKPOINTS_TABLE,
      sql: `CREATE TABLE IF NOT EXISTS ${at(CHECKPOINTS_TABLE)} (
  pipeline_id VARCHAR(64) NOT NULL PRIMARY KEY,
  lsn VARCHAR(32) NULL,
  epoch BIGINT NOT NULL,
  updated_at DATETIME(6) NOT NULL
) ${tableOptions(collation)}`,
    },
    {
      table: PARTITIONS_TABLE,
      sql: `CREATE TABLE IF NOT EXISTS ${at(PARTITIONS_TABLE)} (
  pipeline_id VARCHAR(64) NOT NULL,
  table_name VARCHAR(300) NOT NULL,
  partition_id VARCHAR(64) NOT NULL,
  row_count BIGINT NOT NULL,
  done_at DATETIME(6) NOT NULL,
  PRIMARY KEY (pipeline_id, table_name, partition_id)
) ${tableOptions(collation)}`,
    },
  ];
}

const placeholders = (count: number) => `(${Array.from({ length: count }, () => '?').join(', ')})`;

/**
 * Multi-row upsert of `rows` rows of `columns`: a row whose key is there already gets the given
 * non-key columns, the others keep theirs (unchanged TOAST). Rows are applied in order, so a key
 * given twice ends with its last image.
 */
export function upsertSql(
  target: TableRef,
  columns: readonly Pick<ColumnSchema, 'name'>[],
  keyColumns: readonly string[],
  rows: number,
  style: UpsertStyle = 'values',
): string {
  const names = columns.map((c) => quoteIdent(c.name));
  const values = Array.from({ length: rows }, () => placeholders(columns.length)).join(', ');
  const updated = columns.filter((c) => !keyColumns.includes(c.name)).map((c) => quoteIdent(c.name));
  // With nothing but the key, a row that is there already is left as it is.
  const firstKey = quoteIdent(keyColumns[0] as string);
  const action =
    updated.length > 0
      ? duplicateKeyUpdate(style, updated)
      : ` ON DUPLICATE KEY UPDATE ${firstKey} = ${firstKey}`;
  return `INSERT INTO ${qualifiedName(target)} (${names.join(', ')}) VALUES ${values}${action}`;
}

/** Delete of `rows` rows by key: parameters are the key columns of each row in turn. */
export function deleteSql(target: TableRef, keyColumns: readonly string[], rows: number): string {
  const keys = keyColumns.map(quoteIdent);
  const one = keys.length === 1 ? '?' : placeholders(keys.length);
  const list = Array.from({ length: rows }, () => one).join(', ');
  const left = keys.length === 1 ? keys[0] : `(${keys.join(', ')})`;
  return `DELETE FROM ${qualifiedName(target)} WHERE ${left} IN (${list})`;
}

/** Update of one row in place: parameters are `columns`, then the key columns of the row to update. */
export function updateSql(
  target: TableRef,
  columns: readonly Pick<ColumnSchema, 'name'>[],
  keyColumns: readonly string[],
): string {
  const sets = columns.map((c) => `${quoteIdent(c.name)} = ?`).join(', ');
  const where = keyColumns.map((k) => `${quoteIdent(k)} = ?`).join(' AND ');
  return `UPDATE ${qualifiedName(target)} SET ${sets} WHERE ${where}`;
}

/**
 * Empties a target inside a transaction: MySQL's TRUNCATE commits by itself (which would commit a
 * batch's earlier changes without their checkpoint) and needs the DROP privilege.
 */
export const deleteAllSql = (target: TableRef): string => `DELETE FROM ${qualifiedName(target)}`;
