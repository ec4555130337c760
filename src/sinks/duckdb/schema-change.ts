import type { ColumnSchema, TableRef, TableSchema } from '../../core/change.js';
import type { SchemaChangeItem } from '../../core/schema-diff.js';
import { duckdbColumnOf } from './column-types.js';
import { columnSql, createTableSql, qualifiedName, quoteIdent, quoteLiteral } from './ddl.js';

type PlannedColumn = Pick<ColumnSchema, 'name' | 'typeName' | 'typeOid' | 'nullable'> & { isKey: boolean };

/** The temporary name a table is rebuilt under when its key changes. */
const rebuiltName = (table: string) => `${table}__replicator_rekey`;

/**
 * The DDL bringing a target from `current` through `changes`, one statement per step, with the
 * type mapping of table creation. An added column is nullable (rows already copied have no value
 * for it) and gets the source rows' value by an UPDATE when the source says which. DuckDB cannot
 * change a primary key in place: the table is rebuilt under the new key and renamed back.
 */
export function schemaChangeSql(
  target: TableRef,
  current: TableSchema,
  changes: readonly SchemaChangeItem[],
): string[] {
  const table = qualifiedName(target);
  const columns = new Map<string, PlannedColumn>(
    current.columns.map((c) => [c.name, { ...c, isKey: current.keyColumns.includes(c.name) }]),
  );
  let keys = [...current.keyColumns];
  /** Values of added columns for the rows already there, by the column's latest name. */
  const backfills = new Map<string, string>();
  const known = (name: string): PlannedColumn =>
    columns.get(name) ?? { name, typeName: 'text', typeOid: 0, isKey: false, nullable: true };
  const steps = (change: SchemaChangeItem): string[] => {
    switch (change.kind) {
      case 'add_column': {
        const column: PlannedColumn = {
          name: change.column,
          typeName: change.type,
          typeOid: 0,
          isKey: false,
          nullable: true,
        };
        columns.set(column.name, column);
        const mapped = duckdbColumnOf(column);
        const add = `ALTER TABLE ${table} ADD COLUMN ${columnSql(mapped, false)}`;
        if (typeof change.existing_value !== 'string') return [add];
        backfills.set(column.name, mapped.cast(quoteLiteral(mapped.stage(change.existing_value))));
        return [add];
      }
      case 'drop_column':
        columns.delete(change.column);
        backfills.delete(change.column);
        return [`ALTER TABLE ${table} DROP COLUMN ${quoteIdent(change.column)}`];
      case 'rename_column': {
        const column = { ...known(change.from), name: change.to };
        columns.delete(change.from);
        columns.set(change.to, column);
        keys = keys.map((k) => (k === change.from ? change.to : k));
        const backfill = backfills.get(change.from);
        if (backfill !== undefined) {
          backfills.delete(change.from);
          backfills.set(change.to, backfill);
        }
        return [`ALTER TABLE ${table} RENAME COLUMN ${quoteIdent(change.from)} TO ${quoteIdent(change.to)}`];
      }
      case 'alter_type': {
        const column = { ...known(change.column), typeName: change.to, typeOid: 0 };
        columns.set(column.name, column);
        const type = duckdbColumnOf(column).type;
        return [`ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(column.name)} TYPE ${type}`];
      }
      case 'set_not_null':
      case 'drop_not_null': {
        const column = { ...known(change.column), nullable: change.kind === 'drop_not_null' };
        columns.set(column.name, column);
        const action = change.kind === 'set_not_null' ? 'SET NOT NULL' : 'DROP NOT NULL';
        return [`ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(column.name)} ${action}`];
      }
      case 'change_key': {
        keys = [...change.to];
        for (const column of columns.values()) column.isKey = keys.includes(column.name);
        const rebuilt = { schema: target.schema, table: rebuiltName(target.table) };
        const defs = [...columns.values()].map((c) => ({
          column: duckdbColumnOf(c),
          notNull: c.isKey || !c.nullable,
        }));
        const names = [...columns.keys()].map(quoteIdent).join(', ');
        return [
          createTableSql(rebuilt, defs, keys, false),
          `INSERT INTO ${qualifiedName(rebuilt)} (${names}) SELECT ${names} FROM ${table}`,
          `DROP TABLE ${table}`,
          `ALTER TABLE ${qualifiedName(rebuilt)} RENAME TO ${quoteIdent(target.table)}`,
        ];
      }
    }
  };
  const statements = changes.flatMap(steps);
  // Last: DuckDB cannot commit a transaction that changes rows of a table and then rewrites it (DROP COLUMN, ALTER TYPE).
  for (const [name, value] of backfills)
    statements.push(`UPDATE ${table} SET ${quoteIdent(name)} = ${value}`);
  return statements;
}

const IDENT = '"((?:[^"]|"")*)"';
const unquote = (text: string) => text.replaceAll('""', '"');

/** What a statement of `schemaChangeSql` needs of the table's columns to be already done, if it can tell. */
export function alreadyDoneCheck(statement: string): ((columns: ReadonlySet<string>) => boolean) | undefined {
  const add = new RegExp(`^ALTER TABLE .* ADD COLUMN ${IDENT} `).exec(statement);
  if (add) return (cols) => cols.has(unquote(add[1] as string).toLowerCase());
  const drop = new RegExp(`^ALTER TABLE .* DROP COLUMN ${IDENT}$`).exec(statement);
  if (drop) return (cols) => !cols.has(unquote(drop[1] as string).toLowerCase());
  const rename = new RegExp(`^ALTER TABLE .* RENAME COLUMN ${IDENT} TO ${IDENT}$`).exec(statement);
  if (rename) {
    return (cols) =>
      !cols.has(unquote(rename[1] as string).toLowerCase()) &&
      cols.has(unquote(rename[2] as string).toLowerCase());
  }
  return undefined;
}
