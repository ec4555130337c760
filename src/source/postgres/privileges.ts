import type pg from 'pg';
import type { TableRef } from '../../core/change.js';
import { SourceNotReadyError } from './errors.js';
import { ident, tableText } from './identifiers.js';
import { publicationProblems, verifyPublication } from './user-publication.js';

/** The publication a pipeline streams through: its own (created and altered by the service) or one the user made. */
export interface PublicationChoice {
  /** Its name; undefined for the pipeline's own before the pipeline exists (it does not exist yet either). */
  name: string | undefined;
  /** Named by the user in the definition: the service only reads it. */
  userNamed: boolean;
}

/** The publication suggested to a role that cannot create the pipeline's own. */
const SUGGESTED_PUBLICATION = 'replicator';

// Ownership lines listed one by one before the rest are counted.
const MAX_LISTED = 10;

/**
 * Checks that the connected role holds what a pipeline over `tables` needs at the source, beyond
 * replication itself (checkSourceReady): USAGE on the schemas and SELECT on the tables to copy
 * them; for the pipeline's own publication, CREATE on the database (while it does not exist),
 * ownership of it (once it does) and ownership of every table (to publish it); for a publication
 * the user made, that it exists and publishes every change of every table. Tables that do not
 * exist are left to readTableSchemas.
 *
 * @throws SourceNotReadyError naming each missing privilege and the statement that grants it;
 *   PublicationUnfitError when only the user's publication falls short.
 */
export async function checkPrivileges(
  client: pg.ClientBase,
  tables: readonly TableRef[],
  publication: PublicationChoice,
): Promise<void> {
  const { rows: roles } = await client.query<{
    role: string;
    db: string;
    rolsuper: boolean;
    can_create: boolean;
  }>(
    `SELECT current_user::text AS role, current_database()::text AS db, r.rolsuper,
            has_database_privilege(current_database(), 'CREATE') AS can_create
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const me = roles[0];
  if (!me || me.rolsuper || tables.length === 0) {
    if (publication.userNamed && publication.name) await verifyPublication(client, publication.name, tables);
    return;
  }
  const role = ident(me.role);
  const access = await tableAccess(client, tables);
  const problems: string[] = [];

  const noUsage = [...new Set(access.filter((t) => !t.schemaUsage).map((t) => t.table.schema))];
  for (const schema of noUsage) {
    problems.push(
      `USAGE on schema ${ident(schema)}, to read its tables: run GRANT USAGE ON SCHEMA ${ident(schema)} TO ${role};`,
    );
  }
  const noSelect = access.filter((t) => !t.canSelect).map((t) => tableText(t.table));
  if (noSelect.length > 0) {
    problems.push(
      `SELECT on ${noSelect.join(', ')}, to copy ${noSelect.length === 1 ? 'it' : 'them'}: run GRANT SELECT ON ${noSelect.join(', ')} TO ${role};`,
    );
  }

  let footer: string | undefined;
  if (publication.userNamed && publication.name) {
    // Alone, what the publication lacks is its own error (the definition's publication is at fault).
    if (problems.length === 0) return verifyPublication(client, publication.name, tables);
    problems.push(...(await publicationProblems(client, publication.name, tables)));
  } else {
    const own = await ownPublicationProblems(client, me, role, access, publication.name);
    problems.push(...own);
    if (own.length > 0) {
      const list = tables.map(tableText).join(', ');
      footer =
        `Or, without these privileges: have the tables' owner (or a superuser) create the publication, ` +
        `CREATE PUBLICATION ${SUGGESTED_PUBLICATION} FOR TABLE ${list}; ` +
        `and name it in the pipeline's source as "publication": "${SUGGESTED_PUBLICATION}" ` +
        '(the service then only reads it, and never alters or drops it).';
    }
  }
  if (problems.length > 0) {
    throw new SourceNotReadyError(problems, `(role ${me.role}) lacks what the pipeline needs`, footer);
  }
}

interface TableAccess {
  table: TableRef;
  schemaUsage: boolean;
  canSelect: boolean;
  owns: boolean;
  owner: string;
}

/** The connected role's rights on each table that exists. */
async function tableAccess(client: pg.ClientBase, tables: readonly TableRef[]): Promise<TableAccess[]> {
  const { rows } = await client.query<{
    ord: string;
    schema_usage: boolean;
    can_select: boolean;
    owns: boolean;
    owner: string;
  }>(
    `SELECT w.ord::text, has_schema_privilege(n.oid, 'USAGE') AS schema_usage,
            has_table_privilege(c.oid, 'SELECT') AS can_select,
            pg_has_role(c.relowner, 'USAGE') AS owns, pg_get_userbyid(c.relowner)::text AS owner
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(nspname, relname, ord)
       JOIN pg_namespace n ON n.nspname = w.nspname
       JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.relname
      ORDER BY w.ord`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return rows.map((r) => ({
    table: tables[Number(r.ord) - 1] as TableRef,
    schemaUsage: r.schema_usage,
    canSelect: r.can_select,
    owns: r.owns,
    owner: r.owner,
  }));
}

/**
 * What CREATE PUBLICATION ... FOR TABLE and ALTER PUBLICATION ... SET TABLE need: CREATE on the
 * database while the publication does not exist, ownership of it once it does, and ownership of
 * every table listed (PostgreSQL checks it for each, already published or not).
 */
async function ownPublicationProblems(
  client: pg.ClientBase,
  me: { db: string; can_create: boolean },
  role: string,
  access: readonly TableAccess[],
  name: string | undefined,
): Promise<string[]> {
  const problems: string[] = [];
  const existing = name
    ? (
        await client.query<{ owns: boolean; owner: string }>(
          `SELECT pg_has_role(pubowner, 'USAGE') AS owns, pg_get_userbyid(pubowner)::text AS owner
             FROM pg_publication WHERE pubname = $1`,
          [name],
        )
      ).rows[0]
    : undefined;
  if (!existing && !me.can_create) {
    problems.push(
      `CREATE on database ${ident(me.db)}, to create the pipeline's publication: run GRANT CREATE ON DATABASE ${ident(me.db)} TO ${role}; (as the database's owner or a superuser)`,
    );
  }
  if (existing && !existing.owns && name) {
    problems.push(
      `ownership of the pipeline's publication ${ident(name)} (owned by ${existing.owner}), to change its tables: run ALTER PUBLICATION ${ident(name)} OWNER TO ${role}; (as its owner or a superuser)`,
    );
  }
  const notOwned = access.filter((t) => !t.owns);
  for (const t of notOwned.slice(0, MAX_LISTED)) {
    problems.push(
      `ownership of table ${tableText(t.table)} (owned by ${t.owner}), to publish it: run ALTER TABLE ${tableText(t.table)} OWNER TO ${role}; (as its owner or a superuser)`,
    );
  }
  if (notOwned.length > MAX_LISTED) {
    problems.push(`and ownership of ${notOwned.length - MAX_LISTED} more tables, in the same way`);
  }
  return problems;
}
