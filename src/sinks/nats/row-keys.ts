import type { TableSchema } from '../../core/change.js';
import { type ChangeEnvelope, type EnvelopeValue, envelopeText, tablePath } from '../change-envelope.js';

/**
 * The rows a change's message is about, each as its table and key values, for keeping each row's
 * changes in order (see publication.ts): the key the change names and, for an update that moved
 * the row to another key, the new one too, which the row's next changes name. null for a message
 * about its whole table (a truncate) or naming no row (a key column missing).
 */
export function rowsOf(table: TableSchema, envelope: ChangeEnvelope): string[] | null {
  const { key, after } = envelope;
  if (key === null) return null;
  const path = tablePath(table);
  let text = '';
  for (const name in key) text += valueText(key[name] as EnvelopeValue);
  const row = `${path}/${text}`;
  if (envelope.op !== 'update' || after === null) return [row];
  let moved = '';
  for (const name of table.keyColumns) {
    if (!Object.hasOwn(after, name)) return [row];
    moved += valueText(after[name] as EnvelopeValue);
  }
  return moved === text ? [row] : [row, `${path}/${moved}`];
}

/**
 * A key value as text unlike any other value's: its kind, its text, and a NUL (which no value
 * from the source holds) to end it.
 */
function valueText(value: EnvelopeValue): string {
  switch (typeof value) {
    case 'string':
      return `s${value}\u0000`;
    case 'number':
    case 'boolean':
      return `${typeof value === 'number' ? 'n' : 'b'}${value}\u0000`;
    default:
      return value === null ? 'z\u0000' : `j${envelopeText(value)}\u0000`;
  }
}
