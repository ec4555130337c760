import type { ChangeEvent, Row, TableRef, TableSchema } from '../../core/change.js';
import { tableRefKey } from '../table-ref-key.js';

/**
 * One step of a batch, for one table. Keys of a flush are distinct, so its steps commute; steps
 * of one table run in the order given, and tables are independent of each other.
 */
export type Step =
  /** Rows removed by key. */
  | { op: 'delete'; table: TableSchema; keys: Row[] }
  /** Rows written whole: whatever was stored under their key is replaced. */
  | { op: 'replace'; table: TableSchema; rows: Row[] }
  /** Rows of which only `columns` are known (unchanged TOAST): upserted, the other columns keep their stored value. */
  | { op: 'merge'; table: TableSchema; columns: string[]; rows: Row[] }
  | { op: 'truncate'; table: TableSchema }
  /** A row moved to a new key without all its columns: the stored row under `oldKey` gives the others. */
  | { op: 'move'; table: TableSchema; oldKey: Row; columns: string[]; row: Row };

/** What a batch has done to one key so far. */
type KeyState = { kind: 'delete' } | { kind: 'replace'; row: Row } | { kind: 'merge'; row: Row };

/**
 * Folds a batch into steps giving the same end state, so that each key is written once per run of
 * changes: an insert, delete and insert of one key become one replace; an update after an insert
 * completes it. A truncate, and a key change whose other columns are only in the stored row, are
 * written in their place, after what came before them.
 */
export function planBatch(changes: readonly ChangeEvent[], lookup: (ref: TableRef) => TableSchema): Step[] {
  const steps: Step[] = [];
  const pending = new Map<string, { table: TableSchema; keys: Map<string, { key: Row; state: KeyState }> }>();

  const statesOf = (table: TableSchema) => {
    let entry = pending.get(tableRefKey(table));
    if (!entry) {
      entry = { table, keys: new Map() };
      pending.set(tableRefKey(table), entry);
    }
    return entry.keys;
  };

  const flush = (table: TableSchema) => {
    const entry = pending.get(tableRefKey(table));
    if (!entry) return;
    pending.delete(tableRefKey(table));
    const deletes: Row[] = [];
    const replaces: Row[] = [];
    const merges = new Map<string, { columns: string[]; rows: Row[] }>();
    for (const { key, state } of entry.keys.values()) {
      if (state.kind === 'delete') deletes.push(key);
      else if (state.kind === 'replace') replaces.push(state.row);
      else {
        const columns = table.columns.map((c) => c.name).filter((n) => Object.hasOwn(state.row, n));
        const shape = JSON.stringify(columns);
        const group = merges.get(shape) ?? { columns, rows: [] };
        group.rows.push(state.row);
        merges.set(shape, group);
      }
    }
    if (deletes.length > 0) steps.push({ op: 'delete', table, keys: deletes });
    if (replaces.length > 0) steps.push({ op: 'replace', table, rows: replaces });
    for (const group of merges.values()) steps.push({ op: 'merge', table, ...group });
  };

  const keyOf = (table: TableSchema, row: Row | undefined, what: string): Row => {
    const key: Row = {};
    for (const name of table.keyColumns) {
      const value = row?.[name];
      if (value === undefined || value === null) {
        throw new Error(`${what} of ${table.schema}.${table.table} lacks key column ${JSON.stringify(name)}`);
      }
      key[name] = value;
    }
    return key;
  };
  const id = (key: Row) => JSON.stringify(Object.values(key));
  const isComplete = (table: TableSchema, row: Row) => table.columns.every((c) => Object.hasOwn(row, c.name));

  for (const event of changes) {
    if (event.op === 'truncate') {
      for (const ref of event.tables ?? [event.table]) {
        const table = lookup(ref);
        // What the batch did to the table before is emptied anyway.
        pending.delete(tableRefKey(table));
        steps.push({ op: 'truncate', table });
      }
      continue;
    }
    const table = lookup(event.table);
    const states = statesOf(table);
    if (event.op === 'delete') {
      const key = keyOf(table, event.key ?? event.before, 'delete');
      states.set(id(key), { key, state: { kind: 'delete' } });
      continue;
    }
    const after = event.after ?? {};
    for (const name of Object.keys(after)) {
      if (!table.columns.some((c) => c.name === name)) {
        throw new Error(
          `column ${JSON.stringify(name)} of ${table.schema}.${table.table} is not in its schema`,
        );
      }
    }
    const toast = event.unchangedToast ?? [];
    const sent: Row = {};
    for (const [name, value] of Object.entries(after)) if (!toast.includes(name)) sent[name] = value;
    if (event.op === 'insert') {
      const key = keyOf(table, sent, 'insert');
      states.set(id(key), { key, state: { kind: 'replace', row: sent } });
      continue;
    }
    const oldImage = event.key ?? event.before;
    const oldKey = oldImage ? keyOf(table, oldImage, 'update key') : undefined;
    // A key column not sent keeps its value: the old key's.
    const newKey = keyOf(table, { ...oldKey, ...sent }, 'update');
    const row: Row = { ...sent, ...newKey };
    const before = states.get(id(oldKey ?? newKey))?.state;
    const base = before && before.kind !== 'delete' ? before.row : {};
    const merged: Row = { ...base, ...row };
    const complete = before?.kind === 'replace' || isComplete(table, merged);
    if (oldKey === undefined || id(oldKey) === id(newKey)) {
      const kind = before?.kind === 'replace' || before?.kind === 'delete' || complete ? 'replace' : 'merge';
      states.set(id(newKey), { key: newKey, state: { kind, row: merged } });
      continue;
    }
    if (complete || before?.kind === 'delete') {
      states.set(id(oldKey), { key: oldKey, state: { kind: 'delete' } });
      states.set(id(newKey), { key: newKey, state: { kind: 'replace', row: merged } });
      continue;
    }
    // The other columns are in the stored row only: what came before is written first.
    flush(table);
    steps.push({
      op: 'move',
      table,
      oldKey,
      columns: table.columns.map((c) => c.name).filter((n) => Object.hasOwn(merged, n)),
      row: merged,
    });
  }
  for (const { table } of [...pending.values()]) flush(table);
  return steps;
}
