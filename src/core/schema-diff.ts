import type { ColumnSchema, TableSchema } from './change.js';

/** One difference between the schema a sink knows and a table's new shape. */
export type SchemaChangeItem =
  | {
      kind: 'add_column';
      column: string;
      type: string;
      nullable: boolean;
      /**
       * The value rows already in the table have for it, in text form (a constant default), null
       * when they have none; absent when unknown (a volatile default gave each row its own).
       */
      existing_value?: string | null;
    }
  | { kind: 'drop_column'; column: string }
  | { kind: 'rename_column'; from: string; to: string }
  | { kind: 'alter_type'; column: string; from: string; to: string; widening: boolean }
  | { kind: 'set_not_null'; column: string }
  | { kind: 'drop_not_null'; column: string }
  | { kind: 'change_key'; from: string[]; to: string[] };

const INTEGER_WIDTH: Record<string, number> = { smallint: 2, integer: 4, bigint: 8 };
const FLOAT_WIDTH: Record<string, number> = { real: 4, 'double precision': 8 };

/** Whether every value of type `from` is a value of type `to`, written the same way. */
export function isWidening(from: string, to: string): boolean {
  if (from === to) return true;
  if (INTEGER_WIDTH[from] && INTEGER_WIDTH[to])
    return (INTEGER_WIDTH[from] as number) < (INTEGER_WIDTH[to] as number);
  if (INTEGER_WIDTH[from] && to === 'numeric') return true;
  if (FLOAT_WIDTH[from] && FLOAT_WIDTH[to])
    return (FLOAT_WIDTH[from] as number) < (FLOAT_WIDTH[to] as number);
  const varchar = /^character varying\((\d+)\)$/;
  const fromLength = varchar.exec(from)?.[1];
  if (fromLength !== undefined) {
    const toLength = varchar.exec(to)?.[1];
    return (
      to === 'text' ||
      to === 'character varying' ||
      (toLength !== undefined && Number(toLength) >= Number(fromLength))
    );
  }
  if (from === 'character varying') return to === 'text';
  const numeric = /^numeric\((\d+),(\d+)\)$/;
  const f = numeric.exec(from);
  if (f) {
    if (to === 'numeric') return true;
    const t = numeric.exec(to);
    return t !== null && t[2] === f[2] && Number(t[1]) >= Number(f[1]);
  }
  return false;
}

/**
 * The changes that turn `current` into `proposed`. A column gone and another come at the same
 * place with the same type is read as a rename (the stream carries no column identity).
 */
export function diffSchemas(current: TableSchema, proposed: TableSchema): SchemaChangeItem[] {
  const changes: SchemaChangeItem[] = [];
  const before = new Map(current.columns.map((c) => [c.name, c]));
  const after = new Map(proposed.columns.map((c) => [c.name, c]));
  const gone = current.columns.filter((c) => !after.has(c.name));
  const come = proposed.columns.filter((c) => !before.has(c.name));
  const renamed = new Map<string, ColumnSchema>();
  for (const old of gone) {
    const index = current.columns.indexOf(old);
    const candidate = proposed.columns[index];
    if (
      candidate &&
      come.includes(candidate) &&
      candidate.typeName === old.typeName &&
      !renamed.has(old.name)
    ) {
      renamed.set(old.name, candidate);
      changes.push({ kind: 'rename_column', from: old.name, to: candidate.name });
    }
  }
  const renamedTo = new Set([...renamed.values()].map((c) => c.name));
  for (const old of gone) if (!renamed.has(old.name)) changes.push({ kind: 'drop_column', column: old.name });
  for (const column of come) {
    if (!renamedTo.has(column.name)) {
      changes.push({
        kind: 'add_column',
        column: column.name,
        type: column.typeName,
        nullable: column.nullable,
      });
    }
  }
  for (const column of proposed.columns) {
    const old = before.get(column.name);
    if (!old) continue;
    if (old.typeName !== column.typeName) {
      changes.push({
        kind: 'alter_type',
        column: column.name,
        from: old.typeName,
        to: column.typeName,
        widening: isWidening(old.typeName, column.typeName),
      });
    }
    if (old.nullable && !column.nullable) changes.push({ kind: 'set_not_null', column: column.name });
    if (!old.nullable && column.nullable) changes.push({ kind: 'drop_not_null', column: column.name });
  }
  const renamedKey = (name: string) => renamed.get(name)?.name ?? name;
  if (current.keyColumns.map(renamedKey).join('\u0000') !== proposed.keyColumns.join('\u0000')) {
    changes.push({ kind: 'change_key', from: current.keyColumns, to: proposed.keyColumns });
  }
  return changes;
}

/**
 * Whether `auto` may apply a change by itself: it adds, widens or relaxes, and every row already
 * in the sink stays valid and unchanged.
 */
export function isCompatible(change: SchemaChangeItem): boolean {
  switch (change.kind) {
    case 'add_column':
    case 'drop_not_null':
      return true;
    case 'alter_type':
      return change.widening;
    default:
      return false;
  }
}
