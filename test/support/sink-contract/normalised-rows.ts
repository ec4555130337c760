import type { Row, TableRef, TableSchema } from '../../../src/core/change.js';
import type { ChangeEnvelope } from '../../../src/sinks/change-envelope.js';

/** A value read back, in PostgreSQL's text form, as a change carries it. */
export function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

const keyText = (table: TableSchema, row: Row) => JSON.stringify(table.keyColumns.map((k) => row[k] ?? null));

/** Compares two key values: as numbers when both are integers, else as text. */
function compareKeyValue(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (/^-?\d+$/.test(a) && /^-?\d+$/.test(b)) return BigInt(a) < BigInt(b) ? -1 : 1;
  return a < b ? -1 : 1;
}

/** Rows with exactly the columns of `table`, values as text, in key order. */
export function normalisedRows(table: TableSchema, rows: readonly Record<string, unknown>[]): Row[] {
  const shaped = rows.map((row) =>
    Object.fromEntries(table.columns.map((c) => [c.name, textOf(row[c.name])])),
  ) as Row[];
  return shaped.sort((a, b) => {
    for (const k of table.keyColumns) {
      const order = compareKeyValue(a[k] ?? null, b[k] ?? null);
      if (order !== 0) return order;
    }
    return 0;
  });
}

/** The envelope's `table` field for a table. */
export const envelopeTable = (ref: TableRef) => `${ref.schema}.${ref.table}`;

/**
 * What a consumer holds after applying `envelopes` of one table in order, keyed by primary key: a
 * read or an insert sets the row, an update moves it to its new key keeping the columns it lists
 * as unchanged, a delete removes it, a truncate empties the table.
 */
export function foldEnvelopes(table: TableSchema, envelopes: readonly ChangeEnvelope[]): Row[] {
  const rows = new Map<string, Row>();
  const text = (values: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(values).map(([k, v]) => [k, textOf(v)])) as Row;
  for (const e of envelopes) {
    if (e.op === 'truncate') {
      rows.clear();
    } else if (e.op === 'delete') {
      rows.delete(keyText(table, text(e.key ?? {})));
    } else {
      const after = text(e.after ?? {});
      const newKey = keyText(table, after);
      const oldKey = e.key ? keyText(table, text(e.key)) : newKey;
      // A replayed key change finds the row under its new key already.
      const stored = rows.get(oldKey) ?? rows.get(newKey) ?? {};
      const kept = Object.fromEntries((e.unchanged ?? []).map((c) => [c, stored[c] ?? null]));
      rows.delete(oldKey);
      rows.set(newKey, { ...after, ...kept });
    }
  }
  return normalisedRows(table, [...rows.values()]);
}
