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
  const row = `${path}\u0000${envelopeText(Object.values(key))}`;
  if (envelope.op !== 'update' || after === null) return [row];
  const moved = keyText(table, after);
  return moved === undefined || `${path}\u0000${moved}` === row ? [row] : [row, `${path}\u0000${moved}`];
}

/** The key values of a row as text, in key order; undefined when it lacks one of them. */
function keyText(table: TableSchema, row: Record<string, EnvelopeValue>): string | undefined {
  const values: EnvelopeValue[] = [];
  for (const name of table.keyColumns) {
    if (!Object.hasOwn(row, name)) return undefined;
    values.push(row[name] as EnvelopeValue);
  }
  return envelopeText(values);
}
