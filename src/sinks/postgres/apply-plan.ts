import type {
  ChangeEvent,
  ColumnSchema,
  ColumnValue,
  EncodedRow,
  Row,
  TableRef,
  TableSchema,
} from '../../core/change.js';
import { copyFromSql, deleteSql, truncateSql, updateSql, upsertSql } from './ddl.js';

/** A source table as the sink writes it: its schema and its target. */
export interface TargetTable {
  source: TableSchema;
  target: TableRef;
  /** The key columns, in key order. */
  keys: ColumnSchema[];
}

/** One SQL statement of a batch, with its parameters (one text[] per column). */
export interface Statement {
  text: string;
  values: ColumnValue[][];
  /**
   * The source table its rows are changes of, where each key column is among `values`, and the
   * columns the first `values` are cast to (to name the one whose value the sink cannot read).
   */
  rows?: { table: TableRef; keys: { name: string; at: number }[]; columns: readonly ColumnSchema[] };
  /**
   * For rows that are all inserts: the same rows (row-major) for a plain COPY into the target,
   * about twice as fast as the upsert when none of their keys is there yet; the upsert is the
   * fallback when one is.
   */
  copy?: { text: string; target: TableRef; rows: InsertRow[] };
}

/** An inserted row: its values in table order, or the row as the source encoded it, in that order. */
export type InsertRow = ColumnValue[] | EncodedRow;

/** Rows of one set-based statement, one per key they address (the final states are, per key). */
type RowGroup = {
  table: TargetTable;
  columns: ColumnSchema[];
  rows: ColumnValue[][];
  /** Every row comes from an insert. */
  inserts: boolean;
};

type Group =
  | ({ kind: 'upsert' | 'update' | 'delete' } & RowGroup)
  | { kind: 'move'; table: TargetTable; columns: ColumnSchema[]; row: ColumnValue[] }
  | { kind: 'truncate'; targets: TableRef[] };

/** Statements are split so no single one carries more rows than this. */
export const MAX_ROWS_PER_STATEMENT = 50_000;

/** Inserts of one table from this many rows on are offered as a COPY. */
export const MIN_ROWS_FOR_COPY = 500;

// Key values are never null (keyValues refuses them), so a single one is its own identity.
const keyOf = (values: ColumnValue[]): string =>
  values.length === 1 ? (values[0] as string) : JSON.stringify(values);

function keyValues(table: TargetTable, row: Row | undefined, what: string): ColumnValue[] {
  return table.keys.map((k) => {
    const value = row?.[k.name];
    if (value === undefined || value === null) {
      const { schema, table: name } = table.source;
      throw new Error(`${what} of ${schema}.${name} lacks key column ${JSON.stringify(k.name)}`);
    }
    return value;
  });
}

/** The columns present in `after` (in table order) and whether any column of the table is missing. */
function presentColumns(
  table: TargetTable,
  event: ChangeEvent,
): { columns: ColumnSchema[]; missing: boolean } {
  const after = event.after ?? {};
  const all = table.source.columns;
  const toast = event.unchangedToast;
  // Runs once per event: plain loops, and the table's own array when every column is there.
  let sent = 0;
  for (const column of all) if (Object.hasOwn(after, column.name)) sent++;
  if (sent !== columnCount(after)) {
    const unknown = Object.keys(after).find((name) => !all.some((c) => c.name === name));
    const { schema, table: t } = table.source;
    throw new Error(`column ${JSON.stringify(unknown)} of ${schema}.${t} is not in its schema`);
  }
  if (sent === all.length && !toast?.length) return WHOLE.get(all) ?? wholeOf(all);
  const columns = all.filter((c) => Object.hasOwn(after, c.name) && !toast?.includes(c.name));
  return columns.length === all.length ? { columns: all, missing: false } : { columns, missing: true };
}

// The answer for a whole image, made once per table's columns.
const WHOLE = new WeakMap<ColumnSchema[], { columns: ColumnSchema[]; missing: false }>();
function wholeOf(all: ColumnSchema[]): { columns: ColumnSchema[]; missing: false } {
  const whole = { columns: all, missing: false as const };
  WHOLE.set(all, whole);
  return whole;
}

/** The new key of an insert or update: from `after`, or from the old key for a key column not sent (TOAST). */
function newKeyImage(table: TargetTable, event: ChangeEvent, present: ColumnSchema[]): Row {
  const image: Row = {};
  for (const key of table.keys) {
    const value = present.includes(key)
      ? event.after?.[key.name]
      : (event.key?.[key.name] ?? event.before?.[key.name]);
    if (value !== undefined) image[key.name] = value;
  }
  return image;
}

const sameColumns = (a: ColumnSchema[], b: ColumnSchema[]): boolean =>
  a === b || (a.length === b.length && a.every((c, i) => c === b[i]));

/** Where a row stands at the end of a stretch of the batch. */
type FinalState =
  | { kind: 'delete'; key: ColumnValue[] }
  /** A whole image (or every column the stream sent) to write, inserting the row if it is not there. */
  | { kind: 'upsert'; key: ColumnValue[]; columns: ColumnSchema[]; row: ColumnValue[]; insert: boolean }
  /** Some columns of a row that is there; the others keep their stored values (unchanged TOAST). */
  | { kind: 'update'; key: ColumnValue[]; columns: ColumnSchema[]; row: ColumnValue[] };

/** The columns of both images in table order, each with its value from `later` where it has one. */
function mergeImages(
  table: TargetTable,
  earlier: { columns: ColumnSchema[]; row: ColumnValue[] },
  later: { columns: ColumnSchema[]; row: ColumnValue[] },
): { columns: ColumnSchema[]; row: ColumnValue[] } {
  const columns = table.source.columns.filter(
    (c) => earlier.columns.includes(c) || later.columns.includes(c),
  );
  const row = columns.map((c) => {
    const at = later.columns.indexOf(c);
    return at >= 0 ? (later.row[at] ?? null) : (earlier.row[earlier.columns.indexOf(c)] ?? null);
  });
  return { columns, row };
}

/**
 * Turns the changes of a batch into set-based statements. The batch is one sink transaction, so
 * only where each row ends up matters: the changes are folded into each row's final state (the
 * last image, a delete, or the columns an update changed, merged into an earlier image of the same
 * row), and every table gets at most one delete, one upsert and one update per set of columns,
 * however its changes interleave. A truncate, and an update that moves a row to a new key without
 * sending all its columns, are applied in their place: what comes before them is written first.
 */
export function planBatch(
  changes: readonly ChangeEvent[],
  lookup: (ref: TableRef) => TargetTable,
  maxRows = MAX_ROWS_PER_STATEMENT,
): Statement[] {
  const inserted = insertsOnly(changes, lookup);
  if (inserted) {
    return [...inserted].flatMap(([table, rows]) =>
      rowStatements({ kind: 'upsert', table, columns: table.source.columns, inserts: true }, rows, maxRows),
    );
  }
  const statements: Statement[] = [];
  let finals = new Map<TargetTable, Map<string, FinalState>>();
  const writeFinals = () => {
    for (const [table, rows] of finals) {
      for (const group of groupsOf(table, rows)) statements.push(...statementsOf(group, maxRows));
    }
    finals = new Map();
  };

  for (const event of changes) {
    if (event.op === 'truncate') {
      writeFinals();
      const targets = (event.tables ?? [event.table]).map((ref) => lookup(ref).target);
      statements.push(...statementsOf({ kind: 'truncate', targets }, maxRows));
      continue;
    }
    const table = lookup(event.table);
    let rows = finals.get(table);
    if (!rows) {
      rows = new Map();
      finals.set(table, rows);
    }
    if (event.op === 'delete') {
      const key = keyValues(table, event.key ?? event.before, 'delete');
      rows.set(keyOf(key), { kind: 'delete', key });
      continue;
    }
    const { columns, missing } = presentColumns(table, event);
    const newKey = keyValues(table, newKeyImage(table, event, columns), event.op);
    const oldImage = event.op === 'update' ? (event.key ?? event.before) : undefined;
    const oldKey = oldImage ? keyValues(table, oldImage, 'update key') : newKey;
    const moved = keyOf(oldKey) !== keyOf(newKey);
    const row = columns.map((c) => event.after?.[c.name] ?? null);
    const at = keyOf(newKey);
    const prior = rows.get(at);
    if (event.op === 'insert' || !missing) {
      // A moved row leaves its old key; the new image is complete, so it is upserted.
      if (moved) rows.set(keyOf(oldKey), { kind: 'delete', key: oldKey });
      // Only a row first seen here by its insert may be copied in: another change may have left it in the sink.
      rows.set(at, { kind: 'upsert', key: newKey, columns, row, insert: event.op === 'insert' && !prior });
    } else if (moved) {
      // Missing columns keep their stored values only if the row is updated in place, in its turn.
      writeFinals();
      statements.push(...statementsOf({ kind: 'move', table, columns, row: [...row, ...oldKey] }, maxRows));
    } else if (columns.length > 0) {
      if (prior?.kind === 'upsert' || prior?.kind === 'update') {
        // The columns this update sent replace those of the earlier image; the others stay as they were.
        const merged = mergeImages(table, prior, { columns, row });
        rows.set(at, { ...prior, ...merged, ...(prior.kind === 'upsert' ? { insert: false } : {}) });
      } else if (prior?.kind !== 'delete') {
        // After a delete the row is gone, and an update of it (which a source cannot send) changes nothing.
        rows.set(at, { kind: 'update', key: newKey, columns, row });
      }
    }
  }
  writeFinals();
  return statements;
}

/**
 * The rows of a batch that holds nothing but inserts of whole rows, by table; undefined for any
 * other batch, or for one the folding path is to plan or refuse (a key seen twice, a row without
 * a column of its table or with one it does not have). A backlog of new rows is such a batch, and
 * planning it makes nothing per change but the row.
 */
function insertsOnly(
  changes: readonly ChangeEvent[],
  lookup: (ref: TableRef) => TargetTable,
): Map<TargetTable, InsertRow[]> | undefined {
  // Ops first: a mixed batch (an update after thousands of inserts) is not turned into rows twice.
  for (let i = 0; i < changes.length; i++) {
    const event = changes[i] as ChangeEvent;
    if (event.op !== 'insert' || event.unchangedToast?.length) return undefined;
    // An encoded row is not read (decoded) to tell it is there.
    if (!event.encoded && !event.after) return undefined;
  }
  const byTable = new Map<TargetTable, InsertedRows>();
  for (let i = 0; i < changes.length; i++) {
    const event = changes[i] as ChangeEvent;
    const table = lookup(event.table);
    const encoded = event.encoded;
    const row =
      encoded && encodedFits(table, encoded) ? encoded : wholeRow(table.source.columns, event.after as Row);
    if (!row) return undefined;
    let entry = byTable.get(table);
    if (!entry) {
      entry = { rows: [], last: Number.NEGATIVE_INFINITY, keys: undefined };
      byTable.set(table, entry);
    }
    if (!entry.keys) {
      // Keys in ascending numeric order (a serial or identity key: new rows) are distinct by that
      // order alone. Number() of two equal keys is equal, and NaN (text, composite or null keys) is
      // never greater: either ends the order, and a set of the keys so far takes over.
      const n = keyNumber(table, row);
      if (n > entry.last) {
        entry.last = n;
        entry.rows.push(row);
        continue;
      }
      entry.keys = new Set(entry.rows.map((earlier) => rowKey(table, earlier) as string));
    }
    const key = rowKey(table, row);
    if (key === undefined) return undefined;
    if (entry.keys.has(key)) return undefined;
    entry.keys.add(key);
    entry.rows.push(row);
  }
  const rows = new Map<TargetTable, InsertRow[]>();
  for (const [table, entry] of byTable) rows.set(table, entry.rows);
  return rows;
}

/** One table's rows of an insert-only batch, and what tells their keys apart. */
interface InsertedRows {
  rows: InsertRow[];
  /** The numeric value of the last key, while every key so far came in ascending numeric order. */
  last: number;
  /** Every key so far, once they did not. */
  keys: Set<string> | undefined;
}

/** The values of `after` in table order; undefined unless it has exactly the table's columns. */
function wholeRow(columns: readonly ColumnSchema[], after: Row): ColumnValue[] | undefined {
  const row = new Array<ColumnValue>(columns.length);
  for (let i = 0; i < columns.length; i++) {
    const value = after[(columns[i] as ColumnSchema).name];
    if (value === undefined) return undefined;
    row[i] = value;
  }
  return columnCount(after) === columns.length ? row : undefined;
}

// The last shape of encoded rows seen per table, and whether it is the table's columns in order.
const encodedShapes = new WeakMap<TargetTable, { columns: readonly string[]; fits: boolean }>();

/** Whether an encoded row has exactly the table's columns, in its order (rows of a shape share `columns`). */
function encodedFits(table: TargetTable, row: EncodedRow): boolean {
  const seen = encodedShapes.get(table);
  if (seen?.columns === row.columns) return seen.fits;
  const columns = table.source.columns;
  const fits = row.columns.length === columns.length && columns.every((c, i) => c.name === row.columns[i]);
  encodedShapes.set(table, { columns: row.columns, fits });
  return fits;
}

/** An inserted row's values in table order. */
export const insertValues = (row: InsertRow): ColumnValue[] => (Array.isArray(row) ? row : row.values());

/** The columns a row image holds, counted without Object.keys, which would make an array per row. */
function columnCount(row: Row): number {
  let count = 0;
  for (const _ in row) count++;
  return count;
}

// Where each key column sits in a whole row, per table.
const keyPositions = new WeakMap<TargetTable, number[]>();

function keyPositionsOf(table: TargetTable): number[] {
  let at = keyPositions.get(table);
  if (!at) {
    at = table.keys.map((k) => table.source.columns.indexOf(k));
    keyPositions.set(table, at);
  }
  return at;
}

/** A whole row's single key as a number (NaN for a composite, null or not numeric key). */
function keyNumber(table: TargetTable, row: InsertRow): number {
  if (Array.isArray(row)) {
    const key = rowKey(table, row);
    return key === undefined ? Number.NaN : Number(key);
  }
  // An encoded key is read as a number from its bytes, without a string of it.
  const at = keyPositionsOf(table);
  return at.length === 1 ? row.integer(at[0] as number) : Number.NaN;
}

/** The key of a whole row, as the folding path keys it; undefined when a key column is null. */
function rowKey(table: TargetTable, row: InsertRow): string | undefined {
  const at = keyPositionsOf(table);
  const valueAt = Array.isArray(row) ? (i: number) => row[i] : (i: number) => row.text(i);
  if (at.length === 1) return valueAt(at[0] as number) ?? undefined;
  const key: ColumnValue[] = [];
  for (const i of at) {
    const value = valueAt(i);
    if (value === null || value === undefined) return undefined;
    key.push(value);
  }
  return keyOf(key);
}

/** One table's final states as groups of one statement kind and one set of columns: deletes first. */
function groupsOf(table: TargetTable, rows: Map<string, FinalState>): Group[] {
  const deletes: Group = { kind: 'delete', table, columns: table.keys, rows: [], inserts: false };
  const upserts: RowGroup[] = [];
  const updates: RowGroup[] = [];
  // Rows first seen in the batch by their insert go apart when there are enough of them for a
  // COPY, whatever else the batch upserts (a backlog of transactions that each update a row and
  // insert one); fewer go with the other upserts, one statement rather than two.
  let insertedRows = 0;
  for (const state of rows.values()) if (state.kind === 'upsert' && state.insert) insertedRows++;
  const insertsApart = insertedRows >= MIN_ROWS_FOR_COPY;
  const inserted: RowGroup[] = [];
  const groupFor = (list: RowGroup[], columns: ColumnSchema[], make: () => RowGroup) => {
    const found = list.find((g) => sameColumns(g.columns, columns));
    if (found) return found;
    const group = make();
    list.push(group);
    return group;
  };
  for (const state of rows.values()) {
    if (state.kind === 'delete') {
      deletes.rows.push(state.key);
      continue;
    }
    const { columns, row } = state;
    if (state.kind === 'upsert') {
      const list = state.insert && insertsApart ? inserted : upserts;
      const group = groupFor(list, columns, () => ({ table, columns, rows: [], inserts: true }));
      if (!state.insert) group.inserts = false;
      group.rows.push(row);
    } else {
      const group = groupFor(updates, columns, () => ({ table, columns, rows: [], inserts: false }));
      group.rows.push([...row, ...state.key]);
    }
  }
  return [
    ...(deletes.rows.length > 0 ? [deletes] : []),
    ...upserts.map((g): Group => ({ kind: 'upsert', ...g })),
    ...inserted.map((g): Group => ({ kind: 'upsert', ...g })),
    ...updates.map((g): Group => ({ kind: 'update', ...g })),
  ];
}

/** Column-major parameters: one array per column over the given rows. */
function transpose(rows: readonly InsertRow[], width: number): ColumnValue[][] {
  const values: ColumnValue[][] = Array.from({ length: width }, () => new Array<ColumnValue>(rows.length));
  rows.forEach((inserted, r) => {
    const row = insertValues(inserted);
    for (let c = 0; c < width; c++) (values[c] as ColumnValue[])[r] = row[c] ?? null;
  });
  return values;
}

function statementsOf(group: Group, maxRows: number): Statement[] {
  if (group.kind === 'truncate') return [{ text: truncateSql(group.targets), values: [] }];
  if (group.kind === 'move') {
    const { table, columns } = group;
    const text = updateSql(table.target, columns, table.keys);
    const values = transpose([group.row], columns.length + table.keys.length);
    return [{ text, values, rows: rowsOf(group) }];
  }
  return rowStatements(group, group.rows, maxRows);
}

/** Where the source table's key columns are among a statement's parameters. */
function rowsOf(group: {
  kind: Exclude<Group['kind'], 'truncate'>;
  table: TargetTable;
  columns: ColumnSchema[];
}): NonNullable<Statement['rows']> {
  const { table, columns } = group;
  const keysAt = (at: (i: number, name: string) => number) => ({
    table: { schema: table.source.schema, table: table.source.table },
    keys: table.keys.map((k, i) => ({ name: k.name, at: at(i, k.name) })),
    columns,
  });
  // Updates carry the key after the columns; deletes carry only the key; upserts carry it among the columns.
  return group.kind === 'move' || group.kind === 'update'
    ? keysAt((i) => columns.length + i)
    : group.kind === 'delete'
      ? keysAt((i) => i)
      : keysAt((_, name) => columns.findIndex((c) => c.name === name));
}

/** The statements of one group's rows: at most `maxRows` each, offered as a COPY where all are inserts. */
function rowStatements(
  group: { kind: 'upsert' | 'update' | 'delete' } & Omit<RowGroup, 'rows'>,
  rows: InsertRow[],
  maxRows: number,
): Statement[] {
  const { table, columns } = group;
  const text =
    group.kind === 'delete'
      ? deleteSql(table.target, table.keys)
      : group.kind === 'update'
        ? updateSql(table.target, columns, table.keys)
        : upsertSql(
            table.target,
            columns,
            table.keys.map((k) => k.name),
          );
  const width = group.kind === 'update' ? columns.length + table.keys.length : columns.length;
  const copy = group.kind === 'upsert' && group.inserts && rows.length >= MIN_ROWS_FOR_COPY;
  const located = rowsOf(group);
  const statements: Statement[] = [];
  for (let i = 0; i < rows.length; i += maxRows) {
    const part = rows.length <= maxRows ? rows : rows.slice(i, i + maxRows);
    // Column-major parameters only when asked for: rows that go in by COPY never need them.
    let values: ColumnValue[][] | undefined;
    const statement: Statement = {
      text,
      get values() {
        values ??= transpose(part, width);
        return values;
      },
      rows: located,
    };
    if (copy) statement.copy = { text: copyFromSql(table.target, columns), target: table.target, rows: part };
    statements.push(statement);
  }
  return statements;
}
