import type { TableRef } from '../../core/change.js';
import type { SchemaChangeItem } from '../../core/schema-diff.js';
import { qualifiedName, quoteIdent, typeSql } from './ddl.js';

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * The DDL that brings a target table from the known shape to the proposed one, one statement
 * per change. An added column is nullable in the sink even when NOT NULL at the source: rows
 * already copied have no value for it (the source's default is not carried by the stream).
 */
export function schemaChangeSql(target: TableRef, changes: readonly SchemaChangeItem[]): string[] {
  const table = qualifiedName(target);
  return changes.flatMap((change) => {
    // Rows already copied get the value the source's rows have, then the sink drops the default.
    if (change.kind === 'add_column' && typeof change.existing_value === 'string') {
      const column = quoteIdent(change.column);
      const type = typeSql(change.type);
      return [
        `ALTER TABLE ${table} ADD COLUMN ${column} ${type} DEFAULT ${literal(change.existing_value)}::${type}`,
        `ALTER TABLE ${table} ALTER COLUMN ${column} DROP DEFAULT`,
      ];
    }
    return [statementFor(table, change)];
  });
}

function statementFor(table: string, change: SchemaChangeItem): string {
  switch (change.kind) {
    case 'add_column':
      return `ALTER TABLE ${table} ADD COLUMN ${quoteIdent(change.column)} ${typeSql(change.type)}`;
    case 'drop_column':
      return `ALTER TABLE ${table} DROP COLUMN ${quoteIdent(change.column)}`;
    case 'rename_column':
      return `ALTER TABLE ${table} RENAME COLUMN ${quoteIdent(change.from)} TO ${quoteIdent(change.to)}`;
    case 'alter_type': {
      const type = typeSql(change.to);
      return `ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(change.column)} TYPE ${type} USING ${quoteIdent(change.column)}::${type}`;
    }
    case 'set_not_null':
      return `ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(change.column)} SET NOT NULL`;
    case 'drop_not_null':
      return `ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(change.column)} DROP NOT NULL`;
    case 'change_key': {
      // The primary key's name is the sink's own; it is looked up when the statement runs.
      const regclass = literal(table);
      const columns = change.to.map(quoteIdent).join(', ');
      // A dollar-quote tag that the names inside cannot close early.
      let tag = '$replicator$';
      for (let i = 0; `${table}${columns}`.includes(tag); i++) tag = `$replicator${i}$`;
      return (
        `DO ${tag} DECLARE k text; BEGIN ` +
        `SELECT conname INTO k FROM pg_constraint WHERE conrelid = ${regclass}::regclass AND contype = 'p'; ` +
        `IF k IS NOT NULL THEN EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', ${regclass}::regclass, k); END IF; ` +
        `EXECUTE ${literal(`ALTER TABLE ${table} ADD PRIMARY KEY (${columns})`)}; END ${tag}`
      );
    }
  }
}
