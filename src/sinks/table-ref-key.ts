import type { TableRef } from '../core/change.js';

// Every change of a table shares one ref (the source's), and sinks look its table up per change.
const keys = new WeakMap<TableRef, string>();

/** A table's key in a map: tables are told apart by schema and name, whatever characters they hold. */
export function tableRefKey(ref: TableRef): string {
  let key = keys.get(ref);
  if (key === undefined) {
    key = JSON.stringify([ref.schema, ref.table]);
    keys.set(ref, key);
  }
  return key;
}
