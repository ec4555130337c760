import pg from 'pg';
import type { ColumnSchema, GeneratedColumn, TableRef, TableSchema } from '../../core/change.js';
import type { ReadinessCheck } from '../../core/source.js';
import { SourceNotReadyError, TableNotReplicableError, type TableProblem } from './errors.js';

/** Oldest server whose catalogs (`pg_index.indnkeyatts`) and pgoutput we support. */
const MIN_SERVER_VERSION = 110000;

/** The server's `server_version_num`, e.g. 170002. */
export async function serverVersionNum(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
  return Number(rows[0]?.v);
}

/**
 * Each condition for the source to serve logical replication to the connected role: `wal_level`
 * is `logical`, slots and WAL senders are available (and free), and the role may replicate
 * (superuser, REPLICATION attribute, or membership in RDS's `rds_replication`).
 */
export async function sourceReadiness(client: pg.ClientBase): Promise<ReadinessCheck[]> {
  const { rows } = await client.query<{
    wal_level: string;
    version: number;
    version_text: string;
    max_slots: number;
    used_slots: number;
    max_senders: number;
    used_senders: number;
    role: string;
    rolsuper: boolean;
    rolreplication: boolean;
    rds_replication: boolean;
    db: string;
    can_connect: boolean;
  }>(`
    SELECT current_setting('wal_level') AS wal_level,
           current_setting('server_version_num')::int AS version,
           current_setting('server_version') AS version_text,
           current_database()::text AS db,
           has_database_privilege(current_database(), 'CONNECT') AS can_connect,
           current_setting('max_replication_slots')::int AS max_slots,
           (SELECT count(*) FROM pg_replication_slots)::int AS used_slots,
           current_setting('max_wal_senders')::int AS max_senders,
           (SELECT count(*) FROM pg_stat_replication)::int AS used_senders,
           r.rolname::text AS role, r.rolsuper, r.rolreplication,
           EXISTS (SELECT 1 FROM pg_roles g
                   WHERE g.rolname = 'rds_replication' AND pg_has_role(r.oid, g.oid, 'member')) AS rds_replication
      FROM pg_roles r
     WHERE r.rolname = current_user`);
  const s = rows[0];
  if (!s) throw new SourceNotReadyError(['the current role is not visible in pg_roles']);
  const role = pg.escapeIdentifier(s.role);
  const mayReplicate = s.rolsuper || s.rolreplication || s.rds_replication;
  const freeSlots = s.max_slots - s.used_slots;
  const freeSenders = s.max_senders - s.used_senders;
  return [
    {
      name: 'server_version',
      ok: s.version >= MIN_SERVER_VERSION,
      refusesStart: s.version < MIN_SERVER_VERSION,
      found: `PostgreSQL ${s.version_text}`,
      problem: `PostgreSQL ${s.version} is too old: version 11 or newer is required (14+ to stream large transactions)`,
    },
    {
      name: 'wal_level',
      ok: s.wal_level === 'logical',
      refusesStart: s.wal_level !== 'logical',
      found: `wal_level is '${s.wal_level}'`,
      problem: `wal_level is '${s.wal_level}': set wal_level = logical (postgresql.conf, or ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL`,
    },
    {
      name: 'replication_slots',
      ok: s.max_slots >= 1 && freeSlots >= 1,
      refusesStart: s.max_slots < 1,
      found: `${freeSlots} of ${s.max_slots} replication slots free`,
      problem:
        s.max_slots < 1
          ? 'max_replication_slots is 0: set it to at least 1 per pipeline and restart PostgreSQL'
          : `all ${s.max_slots} replication slots are taken: drop unused ones or raise max_replication_slots and restart PostgreSQL`,
    },
    {
      name: 'wal_senders',
      ok: s.max_senders >= 1 && freeSenders >= 1,
      refusesStart: s.max_senders < 1,
      found: `${freeSenders} of ${s.max_senders} WAL senders free`,
      problem:
        s.max_senders < 1
          ? 'max_wal_senders is 0: set it to at least 1 per pipeline and restart PostgreSQL'
          : `all ${s.max_senders} WAL senders are busy: raise max_wal_senders and restart PostgreSQL`,
    },
    {
      name: 'replication_role',
      ok: mayReplicate,
      refusesStart: !mayReplicate,
      found: s.rolsuper
        ? `Role ${s.role} is a superuser`
        : s.rolreplication
          ? `Role ${s.role} has the REPLICATION attribute`
          : s.rds_replication
            ? `Role ${s.role} is a member of rds_replication`
            : `Role ${s.role} may not use replication`,
      problem: `role ${s.role} may not use replication: run ALTER ROLE ${role} REPLICATION as a superuser (on Amazon RDS: GRANT rds_replication TO ${role})`,
    },
    {
      // Connected now, but CONNECT taken from PUBLIC still refuses the replication session.
      name: 'database_connect',
      ok: s.can_connect,
      refusesStart: false,
      found: `Role ${s.role} may connect to database ${s.db}`,
      problem: `role ${s.role} lacks CONNECT on database ${s.db}: run GRANT CONNECT ON DATABASE ${pg.escapeIdentifier(s.db)} TO ${role}`,
    },
  ];
}

/**
 * Checks that the source can serve logical replication to the connected role (sourceReadiness).
 *
 * @throws SourceNotReadyError listing every problem with what to do about it.
 */
export async function checkSourceReady(client: pg.ClientBase): Promise<void> {
  const problems = (await sourceReadiness(client)).filter((c) => c.refusesStart).map((c) => c.problem);
  if (problems.length > 0) throw new SourceNotReadyError(problems);
}

/**
 * Which server and database a session is on: the cluster's system identifier and the database
 * name (a standby shares its primary's system identifier). Undefined when it cannot be read.
 */
export async function databaseIdentity(client: pg.ClientBase): Promise<string | undefined> {
  try {
    const { rows } = await client.query<{ id: string }>(
      "SELECT system_identifier::text || '/' || current_database() AS id FROM pg_control_system()",
    );
    return rows[0]?.id;
  } catch {
    return undefined;
  }
}

/** `"schema"."table"`, quoted for SQL. */
export function qualifiedName(ref: TableRef): string {
  return `${pg.escapeIdentifier(ref.schema)}.${pg.escapeIdentifier(ref.table)}`;
}

interface TableRow {
  ord: string;
  relid: string | null;
  relkind: string | null;
  relpersistence: string | null;
  relreplident: string | null;
  pk_columns: string[] | null;
  identity_columns: string[] | null;
}

// Key columns of an index in key order, INCLUDE columns excluded.
const indexColumns = (flag: 'indisprimary' | 'indisreplident') => `
  (SELECT array_agg(a.attname::text ORDER BY k.n)
     FROM pg_index i
     CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = c.oid AND i.${flag} AND k.n <= i.indnkeyatts)`;

const RELKIND_NAMES: Record<string, string> = {
  v: 'view',
  m: 'materialized view',
  f: 'foreign table',
  S: 'sequence',
  i: 'index',
  I: 'partitioned index',
  c: 'composite type',
  t: 'TOAST table',
};

function problemOf(ref: TableRef, row: TableRow): TableProblem | null {
  const q = qualifiedName(ref);
  const problem = (reason: TableProblem['reason'], message: string): TableProblem => ({
    ...ref,
    reason,
    message,
  });
  if (row.relid === null) {
    return problem(
      'missing',
      'does not exist (check the schema and the table name; both are case-sensitive)',
    );
  }
  if (row.relkind === 'p') {
    return problem(
      'partitioned',
      'is a partitioned table: replicate its partitions instead (list each partition)',
    );
  }
  if (row.relkind !== 'r') {
    const kind = RELKIND_NAMES[row.relkind ?? ''] ?? `relation of kind '${row.relkind}'`;
    return problem('not-a-table', `is a ${kind}, not a table: only ordinary tables can be replicated`);
  }
  if (row.relpersistence !== 'p') {
    return problem(
      'not-a-table',
      `is an unlogged or temporary table, whose changes are not written to WAL: ALTER TABLE ${q} SET LOGGED`,
    );
  }
  if (row.relreplident === 'n') {
    return problem(
      'replica-identity-nothing',
      `has REPLICA IDENTITY NOTHING, so its updates and deletes carry no key: ALTER TABLE ${q} REPLICA IDENTITY DEFAULT (with a primary key), or ALTER TABLE ${q} REPLICA IDENTITY USING INDEX <unique index>`,
    );
  }
  if (!row.pk_columns?.length && !row.identity_columns?.length) {
    return problem(
      'no-key',
      `has no primary key and no replica identity index: add a primary key, or ALTER TABLE ${q} REPLICA IDENTITY USING INDEX <unique index>`,
    );
  }
  return null;
}

/** A table of the source as `listTables` shows it: replicable or not, and why. */
export interface ListedTable {
  table: TableRef;
  replicable: boolean;
  /** Why it cannot be replicated, and what to do; null when it can. */
  reason: string | null;
  /** The planner's row estimate (`reltuples`); 0 for a table never analysed. */
  estimatedRows: number;
}

/**
 * Every ordinary and partitioned table outside the system schemas, by schema and name, each
 * judged by the same rule as `readTableSchemas` (for a person choosing what to replicate).
 */
export async function listTables(client: pg.ClientBase): Promise<ListedTable[]> {
  const { rows } = await client.query<TableRow & { nspname: string; relname: string; reltuples: string }>(
    `SELECT n.nspname::text, c.relname::text, '0' AS ord, c.oid::int8::text AS relid, c.relkind::text,
            c.relpersistence::text, c.relreplident::text, greatest(c.reltuples, 0)::int8::text AS reltuples,
            ${indexColumns('indisprimary')} AS pk_columns,
            ${indexColumns('indisreplident')} AS identity_columns
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p')
        AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
        AND has_schema_privilege(n.oid, 'USAGE')
      ORDER BY n.nspname, c.relname
      LIMIT 10000`,
  );
  return rows.map((row) => {
    const table = { schema: row.nspname, table: row.relname };
    const problem = problemOf(table, row);
    return {
      table,
      replicable: problem === null,
      reason: problem?.message ?? null,
      estimatedRows: Number(row.reltuples),
    };
  });
}

/**
 * Reads the schema of each requested table, in the order given. A table is replicable iff it is
 * an ordinary logged table with a primary key or a replica identity index (and its replica
 * identity is not NOTHING).
 *
 * `keyColumns` are the replica identity index's columns when the table uses REPLICA IDENTITY
 * USING INDEX, else the primary key's: they are the columns the WAL carries as the old key of
 * updates and deletes, so the only key the change stream can always identify a row by.
 * Generated columns are left out, as pgoutput does not publish them.
 *
 * @throws TableNotReplicableError naming every table that cannot be replicated and why.
 */
export async function readTableSchemas(
  client: pg.ClientBase,
  tables: readonly TableRef[],
): Promise<TableSchema[]> {
  if (tables.length === 0) return [];
  const { rows } = await client.query<TableRow>(
    `SELECT w.ord::text, c.oid::int8::text AS relid, c.relkind::text, c.relpersistence::text, c.relreplident::text,
            ${indexColumns('indisprimary')} AS pk_columns,
            ${indexColumns('indisreplident')} AS identity_columns
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(nspname, relname, ord)
       LEFT JOIN pg_namespace n ON n.nspname = w.nspname
       LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.relname
      ORDER BY w.ord`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  const problems: TableProblem[] = [];
  rows.forEach((row, i) => {
    const problem = problemOf(tables[i] as TableRef, row);
    if (problem) problems.push(problem);
  });
  if (problems.length > 0) throw new TableNotReplicableError(problems);

  const version = await serverVersionNum(client);
  const { rows: columnRows } = await client.query<{
    relid: string;
    name: string;
    type_name: string;
    type_oid: string;
    nullable: boolean;
  }>(
    `SELECT a.attrelid::int8::text AS relid, a.attname::text AS name,
            format_type(a.atttypid, a.atttypmod) AS type_name, a.atttypid::int8::text AS type_oid,
            NOT a.attnotnull AS nullable
       FROM pg_attribute a
      WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
            ${version >= 120000 ? "AND a.attgenerated = ''" : ''}
      ORDER BY a.attrelid, a.attnum`,
    [rows.map((r) => r.relid)],
  );
  const generatedByRel = await generatedColumns(
    client,
    version,
    rows.map((r) => r.relid as string),
  );
  const columnsByRel = new Map<string, typeof columnRows>();
  for (const c of columnRows) {
    const list = columnsByRel.get(c.relid) ?? [];
    list.push(c);
    columnsByRel.set(c.relid, list);
  }

  return rows.map((row, i) => {
    const ref = tables[i] as TableRef;
    const keyColumns =
      row.relreplident === 'i' && row.identity_columns?.length
        ? row.identity_columns
        : (row.pk_columns ?? []);
    const keys = new Set(keyColumns);
    const columns: ColumnSchema[] = (columnsByRel.get(row.relid as string) ?? []).map((c) => ({
      name: c.name,
      typeName: c.type_name,
      typeOid: Number(c.type_oid),
      nullable: c.nullable,
      isKey: keys.has(c.name),
    }));
    const generated = generatedByRel.get(row.relid as string);
    return {
      schema: ref.schema,
      table: ref.table,
      columns,
      keyColumns: [...keyColumns],
      ...(generated ? { generated } : {}),
    };
  });
}

/** Stored generated columns (PostgreSQL 12 and later) of the given relations, with their expressions. */
async function generatedColumns(
  client: pg.ClientBase,
  version: number,
  relids: readonly string[],
): Promise<Map<string, GeneratedColumn[]>> {
  const byRel = new Map<string, GeneratedColumn[]>();
  if (version < 120000 || relids.length === 0) return byRel;
  const { rows } = await client.query<{ relid: string; name: string; type_name: string; expression: string }>(
    `SELECT a.attrelid::int8::text AS relid, a.attname::text AS name,
            format_type(a.atttypid, a.atttypmod) AS type_name, pg_get_expr(d.adbin, d.adrelid) AS expression
       FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = ANY($1::oid[]) AND a.attgenerated = 's' AND NOT a.attisdropped
      ORDER BY a.attrelid, a.attnum`,
    [relids],
  );
  for (const r of rows) {
    const list = byRel.get(r.relid) ?? [];
    list.push({ name: r.name, typeName: r.type_name, expression: r.expression });
    byRel.set(r.relid, list);
  }
  return byRel;
}
