import type { ChangeEvent, ColumnSchema, Row, TableRef, TableSchema } from '../../core/change.js';
import { RefusedChangeError } from '../refused-change.js';
import { deleteAllSql, deleteSql, updateSql, upsertSql } from './ddl.js';
import type { UpsertStyle } from './server-dialect.js';
import { asIs, type MysqlValue, UnstorableValueError, type ValueConverter } from './values.js';

/** A source table as the sink writes it: its schema, its target, and how each column's text is written. */
export interface TargetTable {
  source: TableSchema;
  target: TableRef;
  /** By column name: turns the source's text into what the target column takes. */
  converters: ReadonlyMap<string, ValueConverter>;
  /** Columns whose converter gives bytes: a LOAD DATA sends them in hex. */
  binary: ReadonlySet<string>;
}

/** One statement of a batch, with its parameters and what it is about (for a refusal's message). */
export interface Statement {
  sql: string;
  values: MysqlValue[];
  /** The source table its rows are changes of, and the keys of those rows (in source text). */
  about?: { table: TableRef; keys: Row[] };
  /** The same statement for its `index`th row alone: to tell which row the server refuses. */
  row?: (index: number) => { sql: string; values: MysqlValue[] };
}

/** Bounds of one multi-row statement: max_allowed_packet is 16 MiB by default on MariaDB, 64 MiB on MySQL. */
export interface StatementLimits {
  rows: number;
  bytes: number;
}

export const STATEMENT_LIMITS: StatementLimits = { rows: 1000, bytes: 4 * 1024 * 1024 };

/** Rows of one table waiting to be written by one statement. */
interface Group {
  kind: 'upsert' | 'delete';
  /** The upserted columns, or the key columns of a delete. */
  columns: ColumnSchema[];
  rows: MysqlValue[][];
  keys: Row[];
  bytes: number;
}

const sizeOf = (row: readonly MysqlValue[]) => row.reduce((n, v) => n + (v === null ? 4 : v.length + 3), 0);

/** The key image of a row, in key order; a key column missing or NULL is an error of the stream. */
function keyImage(table: TargetTable, row: Row | undefined, what: string): Row {
  const key: Row = {};
  for (const name of table.source.keyColumns) {
    const value = row?.[name];
    if (value === undefined || value === null) {
      const { schema, table: t } = table.source;
      throw new Error(`${what} of ${schema}.${t} lacks key column ${JSON.stringify(name)}`);
    }
    key[name] = value;
  }
  return key;
}

const sameKey = (a: Row, b: Row) => Object.keys(a).every((k) => a[k] === b[k]);

/** The columns an insert or update sent (in table order), and whether it sent them all. */
function sentColumns(table: TargetTable, event: ChangeEvent): { columns: ColumnSchema[]; complete: boolean } {
  const after = event.after ?? {};
  const all = table.source.columns;
  const names = Object.keys(after);
  // The common case, a whole row: every column there (so no other), the schema's own array.
  if (
    !event.unchangedToast?.length &&
    names.length === all.length &&
    all.every((c) => Object.hasOwn(after, c.name))
  )
    return { columns: all, complete: true };
  for (const name of names) {
    if (!all.some((c) => c.name === name)) {
      const { schema, table: t } = table.source;
      throw new Error(`column ${JSON.stringify(name)} of ${schema}.${t} is not in its schema`);
    }
  }
  const toast = event.unchangedToast ?? [];
  const columns = all.filter((c) => Object.hasOwn(after, c.name) && !toast.includes(c.name));
  return { columns, complete: columns.length === all.length };
}

/**
 * Turns the changes of a batch into statements, in an order that gives the same end state: each
 * table's changes stay in their order, gathered into multi-row upserts (inserts and updates) and
 * deletes while consecutive changes of that table are of one kind and one set of columns. Tables
 * are independent of each other (the sink makes no foreign keys), so one table's run of changes is
 * not cut by another's. A truncate, and an update that moves a row to a new key without sending all
 * its columns, are written in their place. Values are converted here: a value the target cannot
 * hold is a RefusedChangeError naming the table and the key.
 */
export function planBatch(
  changes: readonly ChangeEvent[],
  lookup: (ref: TableRef) => TargetTable,
  limits: StatementLimits = STATEMENT_LIMITS,
  style: UpsertStyle = 'values',
): Statement[] {
  const statements: Statement[] = [];
  const pending = new Map<TargetTable, Group>();

  const flush = (table: TargetTable) => {
    const group = pending.get(table);
    if (!group) return;
    pending.delete(table);
    const sqlFor = (rows: number) =>
      group.kind === 'upsert'
        ? upsertSql(table.target, group.columns, table.source.keyColumns, rows, style)
        : deleteSql(
            table.target,
            group.columns.map((c) => c.name),
            rows,
          );
    statements.push({
      sql: sqlFor(group.rows.length),
      values: group.rows.flat(),
      about: { table: table.source, keys: group.keys },
      row: (index) => ({ sql: sqlFor(1), values: group.rows[index] ?? [] }),
    });
  };

  const add = (
    table: TargetTable,
    kind: Group['kind'],
    columns: ColumnSchema[],
    key: Row,
    row: MysqlValue[],
  ) => {
    let group = pending.get(table);
    if (
      group &&
      (group.kind !== kind ||
        (group.columns !== columns &&
          (group.columns.length !== columns.length || group.columns.some((c, i) => c !== columns[i]))) ||
        group.rows.length >= limits.rows ||
        group.bytes >= limits.bytes)
    ) {
      flush(table);
      group = undefined;
    }
    if (!group) {
      group = { kind, columns, rows: [], keys: [], bytes: 0 };
      pending.set(table, group);
    }
    group.rows.push(row);
    group.keys.push(key);
    group.bytes += sizeOf(row);
  };

  const convert = (table: TargetTable, key: Row, columns: ColumnSchema[], image: Row): MysqlValue[] => {
    const converters = table.converters;
    const values: MysqlValue[] = new Array(columns.length);
    try {
      for (let i = 0; i < columns.length; i++) {
        const name = (columns[i] as ColumnSchema).name;
        values[i] = (converters.get(name) ?? asIs)(image[name] ?? null);
      }
    } catch (error) {
      if (!(error instanceof UnstorableValueError)) throw error;
      throw new RefusedChangeError(table.source, key, error.message, { cause: error });
    }
    return values;
  };

  const keyColumnsOf = (table: TargetTable) =>
    table.source.keyColumns.map((name) => table.source.columns.find((c) => c.name === name) as ColumnSchema);

  const addDelete = (table: TargetTable, key: Row) => {
    const keys = keyColumnsOf(table);
    add(table, 'delete', keys, key, convert(table, key, keys, key));
  };

  for (const event of changes) {
    if (event.op === 'truncate') {
      for (const ref of event.tables ?? [event.table]) {
        const table = lookup(ref);
        flush(table);
        statements.push({ sql: deleteAllSql(table.target), values: [] });
      }
      continue;
    }
    const table = lookup(event.table);
    if (event.op === 'delete') {
      addDelete(table, keyImage(table, event.key ?? event.before, 'delete'));
      continue;
    }
    const { columns: sent, complete } = sentColumns(table, event);
    const after = event.after ?? {};
    const oldImage = event.op === 'update' ? (event.key ?? event.before) : undefined;
    const oldKey = oldImage ? keyImage(table, oldImage, 'update key') : undefined;
    // A key column not sent (TOAST) keeps its value: the old key's.
    const newKey = keyImage(table, complete ? after : { ...oldKey, ...after }, event.op);
    const moved = oldKey !== undefined && !sameKey(oldKey, newKey);
    const image: Row = complete ? after : { ...newKey, ...after };
    // The key is always written: it is what the upsert finds the row by.
    const columns = complete
      ? sent
      : table.source.columns.filter((c) => sent.includes(c) || table.source.keyColumns.includes(c.name));
    if (moved && !complete) {
      // Columns not sent keep their stored values only if the row is updated in place, under its old key.
      flush(table);
      const keys = keyColumnsOf(table);
      statements.push({
        sql: updateSql(table.target, columns, table.source.keyColumns),
        values: [...convert(table, newKey, columns, image), ...convert(table, oldKey, keys, oldKey)],
        about: { table: table.source, keys: [newKey] },
      });
      continue;
    }
    if (moved) addDelete(table, oldKey);
    add(table, 'upsert', columns, newKey, convert(table, newKey, columns, image));
  }
  for (const table of [...pending.keys()]) flush(table);
  return statements;
}
