import type pg from 'pg';
import type { TableRef } from '../../core/change.js';
import type { GoneTable } from '../../core/source.js';

/**
 * The tables of `tables` the publication `publication` no longer carries under their name:
 * dropped at the source (which takes a table out of every publication, and pgoutput says nothing
 * of it), renamed there (the publication follows the table to its new name), or dropped and
 * created again (the new table is in no publication). None when the publication itself is gone:
 * that is the slot check's to report, not a fact about the tables.
 */
export async function goneTables(
  client: pg.ClientBase,
  publication: string,
  tables: readonly TableRef[],
): Promise<GoneTable[]> {
  if (tables.length === 0) return [];
  const { rows } = await client.query<{ ord: string; present: boolean }>(
    `SELECT w.ord::text,
            to_regclass(quote_ident(w.nspname) || '.' || quote_ident(w.relname)) IS NOT NULL AS present
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(nspname, relname, ord)
      WHERE EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $3)
        AND NOT EXISTS (SELECT 1 FROM pg_publication_tables p
                         WHERE p.pubname = $3 AND p.schemaname = w.nspname AND p.tablename = w.relname)
      ORDER BY w.ord`,
    [tables.map((t) => t.schema), tables.map((t) => t.table), publication],
  );
  return rows.map((row) => ({
    table: tables[Number(row.ord) - 1] as TableRef,
    reason: row.present
      ? 'was dropped and created again at the source (or another table took its name): the new table is not replicated'
      : 'does not exist at the source any more (dropped, or renamed)',
  }));
}
