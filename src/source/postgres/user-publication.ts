import type pg from 'pg';
import type { TableRef } from '../../core/change.js';
import { serverVersionNum } from './catalog.js';
import { PublicationUnfitError } from './errors.js';
import { ident, tableText } from './identifiers.js';

/** The changes a publication must publish for nothing to be missed. */
const ALL_CHANGES = ['insert', 'update', 'delete', 'truncate'] as const;

/**
 * Checks that the publication `name` the user made publishes every change of every table.
 * @throws PublicationUnfitError naming what it lacks and the statement that adds it.
 */
export async function verifyPublication(
  client: pg.ClientBase,
  name: string,
  tables: readonly TableRef[],
): Promise<void> {
  const problems = await publicationProblems(client, name, tables);
  if (problems.length > 0) {
    throw new PublicationUnfitError(problems, `cannot stream through publication ${ident(name)}`);
  }
}

/** What the publication `name` lacks to carry every change of `tables`, each with the statement that adds it. */
export async function publicationProblems(
  client: pg.ClientBase,
  name: string,
  tables: readonly TableRef[],
): Promise<string[]> {
  const pub = ident(name);
  const { rows } = await client.query<{
    oid: string;
    pubinsert: boolean;
    pubupdate: boolean;
    pubdelete: boolean;
    pubtruncate: boolean;
    db: string;
  }>(
    `SELECT oid::int8::text, pubinsert, pubupdate, pubdelete, pubtruncate, current_database()::text AS db
       FROM pg_publication WHERE pubname = $1`,
    [name],
  );
  const found = rows[0];
  const all = tables.map(tableText).join(', ');
  if (!found) {
    const db =
      (await client.query<{ db: string }>('SELECT current_database()::text AS db')).rows[0]?.db ?? '';
    return [
      `publication ${pub} does not exist in database ${ident(db)}: have the tables' owner (or a superuser) run CREATE PUBLICATION ${pub} FOR TABLE ${all};`,
    ];
  }
  const problems: string[] = [];
  const { rows: missing } = await client.query<{ ord: string }>(
    `SELECT w.ord::text
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(nspname, relname, ord)
      WHERE NOT EXISTS (SELECT 1 FROM pg_publication_tables p
                         WHERE p.pubname = $3 AND p.schemaname = w.nspname AND p.tablename = w.relname)
      ORDER BY w.ord`,
    [tables.map((t) => t.schema), tables.map((t) => t.table), name],
  );
  if (missing.length > 0) {
    const list = missing.map((r) => tableText(tables[Number(r.ord) - 1] as TableRef)).join(', ');
    problems.push(
      `publication ${pub} does not publish ${list}: have its owner run ALTER PUBLICATION ${pub} ADD TABLE ${list};`,
    );
  }
  const flags = [found.pubinsert, found.pubupdate, found.pubdelete, found.pubtruncate];
  const unpublished = ALL_CHANGES.filter((_, i) => !flags[i]);
  if (unpublished.length > 0) {
    problems.push(
      `publication ${pub} does not publish ${unpublished.join(', ')}, so those changes would not reach the sink: have its owner run ALTER PUBLICATION ${pub} SET (publish = '${ALL_CHANGES.join(', ')}');`,
    );
  }
  if ((await serverVersionNum(client)) >= 150000) {
    const { rows: partial } = await client.query<{ schema: string; table: string }>(
      `SELECT n.nspname::text AS schema, c.relname::text AS table
         FROM pg_publication_rel r JOIN pg_class c ON c.oid = r.prrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE r.prpubid = $1::oid AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL)
          AND (n.nspname::text, c.relname::text) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
      [found.oid, tables.map((t) => t.schema), tables.map((t) => t.table)],
    );
    for (const t of partial) {
      const table = tableText(t);
      problems.push(
        `publication ${pub} publishes ${table} with a row filter or a column list, so some changes would not reach the sink: have its owner run ALTER PUBLICATION ${pub} DROP TABLE ${table}; ALTER PUBLICATION ${pub} ADD TABLE ${table};`,
      );
    }
  }
  return problems;
}
