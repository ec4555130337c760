import mysql from 'mysql2';
import type { ColumnSchema, TableRef, TableSchema } from '../../core/change.js';
import type { SchemaChangeItem } from '../../core/schema-diff.js';
import { mysqlTypeOf, sourceKindOf } from './column-types.js';
import { columnSql, qualifiedName, quoteIdent } from './ddl.js';
import { valueConverter } from './values.js';

/** A column as the plan knows it between its steps. */
type PlannedColumn = Pick<ColumnSchema, 'name' | 'typeName' | 'isKey' | 'nullable'>;

/**
 * The DDL that brings a target table from `current` to the proposed shape, one statement per
 * step, with the type mapping of table creation. An added column is nullable in the sink even
 * when NOT NULL at the source (rows already copied have no value for it); rows already there get
 * the value the source's rows have, by an UPDATE, when the source says which. A new key is made
 * of columns given their key type (a bounded VARCHAR for text) first.
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
  const modify = (column: PlannedColumn) => `ALTER TABLE ${table} MODIFY COLUMN ${columnSql(column)}`;
  const known = (name: string): PlannedColumn =>
    columns.get(name) ?? { name, typeName: 'text', isKey: false, nullable: true };
  const steps = (change: SchemaChangeItem): string[] => {
    switch (change.kind) {
      case 'add_column': {
        const column = { name: change.column, typeName: change.type, isKey: false, nullable: true };
        columns.set(column.name, column);
        const add = `ALTER TABLE ${table} ADD COLUMN ${columnSql(column)}`;
        if (typeof change.existing_value !== 'string') return [add];
        const value = valueConverter(
          column.name,
          sourceKindOf(column.typeName),
          mysqlDataType(column),
        )(change.existing_value);
        return [add, `UPDATE ${table} SET ${quoteIdent(column.name)} = ${mysql.escape(value)}`];
      }
      case 'drop_column':
        columns.delete(change.column);
        return [`ALTER TABLE ${table} DROP COLUMN ${quoteIdent(change.column)}`];
      case 'rename_column': {
        const column = { ...known(change.from), name: change.to };
        columns.delete(change.from);
        columns.set(change.to, column);
        return [`ALTER TABLE ${table} RENAME COLUMN ${quoteIdent(change.from)} TO ${quoteIdent(change.to)}`];
      }
      case 'alter_type': {
        const column = { ...known(change.column), typeName: change.to };
        columns.set(column.name, column);
        return [modify(column)];
      }
      case 'set_not_null':
      case 'drop_not_null': {
        const column = { ...known(change.column), nullable: change.kind === 'drop_not_null' };
        columns.set(column.name, column);
        return [modify(column)];
      }
      case 'change_key': {
        const becomeKeys = change.to.filter((name) => !known(name).isKey);
        for (const column of columns.values()) column.isKey = change.to.includes(column.name);
        return [
          ...becomeKeys.map((name) => modify(known(name))),
          `ALTER TABLE ${table} DROP PRIMARY KEY, ADD PRIMARY KEY (${change.to.map(quoteIdent).join(', ')})`,
        ];
      }
    }
  };
  return changes.flatMap(steps);
}

/** The DATA_TYPE MySQL reports for the mapped type of a column, e.g. `DATETIME(6)` → `datetime`. */
function mysqlDataType(column: PlannedColumn): string {
  return (/^[A-Z]+/.exec(mysqlTypeOf(column))?.[0] ?? '').toLowerCase();
}
