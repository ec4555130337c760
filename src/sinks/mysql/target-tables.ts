import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { type TableRef, type TableSchema, tableKey } from '../../core/change.js';
import type { TargetState } from '../../core/sink.js';
import { validationFailed } from '../../errors/app-error.js';
import type { TargetTable } from './apply-plan.js';
import { sourceKindOf, uncreatableReason } from './column-types.js';
import {
  bookkeepingTablesSql,
  COLLATION_CHOICES,
  createDatabaseSql,
  createTableSql,
  qualifiedName,
} from './ddl.js';
import { generatedColumnsOf } from './generated-columns.js';
import { convertsToBytes, valueConverter } from './values.js';

type Queryable = Pick<PoolConnection, 'query'>;

async function rows<T>(conn: Queryable, sql: string, values: unknown[] = []): Promise<T[]> {
  const [result] = await conn.query<RowDataPacket[]>(sql, values);
  return result as unknown as T[];
}

/** The TABLE_TYPE of a table (`BASE TABLE`, `VIEW`), or undefined when there is none. */
export const tableExists = async (conn: Queryable, ref: TableRef) =>
  (
    await rows<{ type: string }>(
      conn,
      'SELECT TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [ref.schema, ref.table],
    )
  )[0]?.type;

/** The first collation of COLLATION_CHOICES the server has. */
export async function binaryCollation(conn: Queryable): Promise<string> {
  const found = await rows<{ name: string }>(
    conn,
    'SELECT COLLATION_NAME AS name FROM information_schema.COLLATIONS WHERE COLLATION_NAME IN (?)',
    [[...COLLATION_CHOICES]],
  );
  const names = new Set(found.map((r) => r.name));
  return COLLATION_CHOICES.find((c) => names.has(c)) ?? 'utf8mb4_bin';
}

/** The server's `VERSION()`, e.g. `10.11.6-MariaDB-0+deb12u1`. */
export async function serverVersion(conn: Queryable): Promise<string> {
  const [row] = await rows<{ version: string }>(conn, 'SELECT VERSION() AS version');
  return String(row?.version ?? '');
}

/** Whether the server takes `LOAD DATA LOCAL INFILE` (MariaDB's default; MySQL 8's is off). */
export async function localInfileAllowed(conn: Queryable): Promise<boolean> {
  const [row] = await rows<{ allowed: string | number }>(conn, 'SELECT @@GLOBAL.local_infile AS allowed');
  return Number(row?.allowed) === 1;
}

/**
 * Makes sure `database` and the bookkeeping tables in it exist, creating what is missing (the
 * database only when allowed). Existence is checked first, so a user without CREATE privilege can
 * use what another made. MySQL DDL commits by itself: each step stands alone and is idempotent.
 */
export async function ensureBookkeeping(
  conn: Queryable,
  database: string,
  createTables: boolean,
  collation: string,
): Promise<void> {
  const known = await rows<{ name: string }>(
    conn,
    'SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?',
    [database],
  );
  if (known.length === 0) {
    if (!createTables) {
      throw validationFailed(
        'sink.properties.target_database',
        `database ${database} does not exist and create_tables is false`,
      );
    }
    await conn.query(createDatabaseSql(database));
  }
  for (const { table, sql } of bookkeepingTablesSql(database, collation)) {
    if ((await tableExists(conn, { schema: database, table })) === undefined) await conn.query(sql);
  }
}

/**
 * Makes sure the target of `source` can be written: creates it when missing (if allowed), else
 * checks it is a table with every source column and a primary key or unique index on exactly the
 * key columns. Returns the table as the sink writes it, each column's values converted for the
 * target's own column type (a user-made target may differ from the mapping). MySQL compares
 * column names case-insensitively, and so does this check.
 */
export async function prepareTarget(
  conn: Queryable,
  source: TableSchema,
  target: TableRef,
  createTables: boolean,
  collation: string,
): Promise<TargetTable> {
  // None of these heals by waiting: the sink's tables need a person, so they are not retried.
  let type = await tableExists(conn, target);
  if (type === undefined) {
    if (!createTables) {
      throw validationFailed(
        'sink.connection',
        `target table ${tableKey(target)} of ${tableKey(source)} does not exist and create_tables is false`,
      );
    }
    const reason = uncreatableReason(target.table, source.columns, source.keyColumns);
    if (reason) {
      throw validationFailed(
        'source.tables',
        `cannot create ${tableKey(target)} for ${tableKey(source)}: ${reason}; create the target table yourself`,
      );
    }
    await conn.query(createTableSql(target, source, collation, generatedColumnsOf(source).definitions));
    type = await tableExists(conn, target);
  }
  if (type !== 'BASE TABLE') {
    throw validationFailed(
      'sink.connection',
      `target ${tableKey(target)} of ${tableKey(source)} is not a table`,
    );
  }
  const columns = await rows<{ name: string; type: string }>(
    conn,
    'SELECT COLUMN_NAME AS name, DATA_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [target.schema, target.table],
  );
  const types = new Map(columns.map((c) => [c.name.toLowerCase(), c.type]));
  const missing = source.columns.map((c) => c.name).filter((name) => !types.has(name.toLowerCase()));
  if (missing.length > 0) {
    throw validationFailed(
      'sink.connection',
      `target table ${tableKey(target)} lacks the columns ${JSON.stringify(missing)} of ${tableKey(source)}`,
    );
  }
  const unique = await rows<{ index: string; column: string }>(
    conn,
    'SELECT INDEX_NAME AS `index`, COLUMN_NAME AS `column` FROM information_schema.STATISTICS ' +
      'WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0',
    [target.schema, target.table],
  );
  const indexes = new Map<string, string[]>();
  for (const { index, column } of unique)
    indexes.set(index, [...(indexes.get(index) ?? []), column.toLowerCase()]);
  const keys = source.keyColumns.map((k) => k.toLowerCase()).sort();
  const hasKey = [...indexes.values()].some(
    (cols) => cols.length === keys.length && [...cols].sort().every((c, i) => c === keys[i]),
  );
  if (!hasKey) {
    throw validationFailed(
      'sink.connection',
      `target table ${tableKey(target)} has no primary key or unique index on exactly the key columns ` +
        `${JSON.stringify(source.keyColumns)} of ${tableKey(source)}`,
    );
  }
  const converters = new Map(
    source.columns.map((c) => [
      c.name,
      valueConverter(c.name, sourceKindOf(c.typeName), types.get(c.name.toLowerCase()) ?? ''),
    ]),
  );
  const binary = new Set(
    source.columns
      .filter((c) => convertsToBytes(sourceKindOf(c.typeName), types.get(c.name.toLowerCase()) ?? ''))
      .map((c) => c.name),
  );
  return { source, target, converters, binary };
}

/**
 * What the target of `source` is now, read only: whether it exists, which of the columns of
 * `source` it lacks (compared case-insensitively, as MySQL does), and whether it holds no row.
 */
export async function inspectTarget(
  conn: Queryable,
  source: TableSchema,
  target: TableRef,
): Promise<TargetState> {
  if ((await tableExists(conn, target)) === undefined) {
    return { table: source, target, exists: false, missingColumns: [], empty: false };
  }
  const columns = await rows<{ name: string }>(
    conn,
    'SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [target.schema, target.table],
  );
  const present = new Set(columns.map((c) => c.name.toLowerCase()));
  const probe = await rows<{ empty: number }>(
    conn,
    `SELECT NOT EXISTS (SELECT 1 FROM ${qualifiedName(target)}) AS empty`,
  );
  return {
    table: source,
    target,
    exists: true,
    missingColumns: source.columns.map((c) => c.name).filter((c) => !present.has(c.toLowerCase())),
    empty: Number(probe[0]?.empty) === 1,
  };
}
