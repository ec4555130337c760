import type { TableRef } from '../core/change.js';

/** A table's key in a map: tables are told apart by schema and name, whatever characters they hold. */
export const tableRefKey = (ref: TableRef): string => JSON.stringify([ref.schema, ref.table]);
