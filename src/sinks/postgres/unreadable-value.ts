import type pg from 'pg';
import type { ColumnSchema, ColumnValue } from '../../core/change.js';
import { typeSql } from './ddl.js';

/**
 * The first column whose value the sink's server cannot read as the column's type, or undefined.
 * A source can print a value it cannot read back (a `timestamp(0)` rounded up past the last
 * representable second prints `294277-01-01 00:00:00`): the refusal then names the column, which
 * the server's own error does not. Each value is cast alone, under a savepoint of the caller's
 * transaction.
 */
export async function unreadableColumn(
  client: pg.ClientBase,
  columns: readonly Pick<ColumnSchema, 'name' | 'typeName'>[],
  values: readonly ColumnValue[],
): Promise<string | undefined> {
  for (const [i, column] of columns.entries()) {
    const value = values[i];
    if (value === null || value === undefined) continue;
    await client.query('SAVEPOINT probe_value');
    try {
      await client.query(`SELECT $1::text::${typeSql(column.typeName)}`, [value]);
    } catch {
      return column.name;
    } finally {
      await client.query('ROLLBACK TO SAVEPOINT probe_value');
    }
  }
  return undefined;
}
