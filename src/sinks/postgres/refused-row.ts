import type pg from 'pg';
import type { ColumnValue } from '../../core/change.js';
import { RefusedChangeError } from '../refused-change.js';
import type { Statement } from './apply-plan.js';
import { arrayParameters } from './array-literal.js';
import { unreadableColumn } from './unreadable-value.js';

const rowsIn = (statement: Statement) => statement.values[0]?.length ?? 0;

const firstRows = (statement: Statement, count: number): Statement => ({
  ...statement,
  values: statement.values.map((column) => column.slice(0, count)),
});

/**
 * Finds which row of a refused batch the sink will not take, after the batch was rolled back: in
 * a new transaction that is rolled back too, the statements before the refused one run again,
 * then ever shorter prefixes of the refused statement's rows run under a savepoint until the
 * shortest failing prefix is found. Its last row is the change the sink refuses. A batch of n
 * rows costs about log2(n) tries; it runs only on the way to failing the pipeline.
 */
export async function refusedChange(
  client: pg.ClientBase,
  statements: readonly Statement[],
  refusedAt: number,
  error: Error & { detail?: string },
): Promise<RefusedChangeError> {
  const refused = statements[refusedAt] as Statement;
  const sinkError = error.detail ? `${error.message} (${error.detail})` : error.message;
  const about = refused.rows;
  if (!about) return new RefusedChangeError(undefined, undefined, sinkError, { cause: error });
  const fails = async (count: number) => {
    await client.query('SAVEPOINT probe');
    try {
      const prefix = firstRows(refused, count);
      await client.query(prefix.text, arrayParameters(prefix.values));
      return false;
    } catch {
      return true;
    } finally {
      await client.query('ROLLBACK TO SAVEPOINT probe');
    }
  };
  let row: number | undefined;
  let column: string | undefined;
  try {
    await client.query('BEGIN');
    for (const statement of statements.slice(0, refusedAt))
      await client.query(statement.text, arrayParameters(statement.values));
    let lo = 1;
    let hi = rowsIn(refused);
    if (hi > 0 && (await fails(hi))) {
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if (await fails(mid)) hi = mid;
        else lo = mid + 1;
      }
      row = hi - 1;
      column = await unreadableColumn(
        client,
        about.columns,
        about.columns.map((_, i) => refused.values[i]?.[row as number] ?? null),
      );
    }
  } catch {
    row = undefined;
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
  }
  const key =
    row === undefined
      ? undefined
      : Object.fromEntries(
          about.keys.map(({ name, at }) => [name, (refused.values[at]?.[row] ?? null) as ColumnValue]),
        );
  const named = column === undefined ? sinkError : `column ${JSON.stringify(column)}: ${sinkError}`;
  return new RefusedChangeError(about.table, key, named, { cause: error });
}
