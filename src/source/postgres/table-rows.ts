import type pg from 'pg';
import type { TableRef } from '../../core/change.js';
import { qualifiedName } from './catalog.js';

/**
 * The tables of `tables` that hold at least one row: one statement, each table read until its
 * first visible row, so it costs little whatever the tables' sizes.
 */
export async function tablesWithRows(
  client: pg.ClientBase,
  tables: readonly TableRef[],
): Promise<TableRef[]> {
  if (tables.length === 0) return [];
  const probes = tables.map((t) => `EXISTS (SELECT 1 FROM ${qualifiedName(t)})`).join(', ');
  const { rows } = await client.query<{ found: boolean[] }>(`SELECT ARRAY[${probes}] AS found`);
  const found = rows[0]?.found ?? [];
  return tables.filter((_, i) => found[i] === true);
}
