import type pg from 'pg';
import type { TableRef, TableSchema } from '../../core/change.js';
import type { TargetState } from '../../core/sink.js';
import { validationFailed } from '../../errors/app-error.js';
import { tableKey } from './config.js';
import {
  BOOKKEEPING_SCHEMA,
  bookkeepingTablesSql,
  createSchemaSql,
  createTableSql,
  qualifiedName,
  quoteIdent,
} from './ddl.js';

// Serialises the DDL of every sink opening on the same database ('REPL' in ASCII).
const DDL_LOCK = 0x5245504c;

// A unique index ON CONFLICT can use as its arbiter: immediate, valid, no predicate, plain columns.
const FIND_TARGET = `
SELECT c.relkind::text AS kind,
       (SELECT json_object_agg(a.attname, format_type(a.atttypid, a.atttypmod)) FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS types,
       EXISTS (
         SELECT 1 FROM pg_index i
          WHERE i.indrelid = c.oid AND i.indisunique AND i.indimmediate AND i.indisvalid
            AND i.indpred IS NULL AND i.indexprs IS NULL
            AND i.indnkeyatts = cardinality($2::text[])
            AND (SELECT array_agg(a.attname::text) FROM pg_attribute a
                  WHERE a.attrelid = c.oid AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
                @> $2::text[]
       ) AS has_key
  FROM pg_class c
 WHERE c.oid = to_regclass($1)`;

interface TargetRow {
  kind: string;
  types: Record<string, string> | null;
  has_key: boolean;
}

const exists = async (client: pg.ClientBase, fn: 'to_regclass' | 'to_regnamespace', name: string) =>
  (await client.query<{ ok: boolean }>(`SELECT ${fn}($1) IS NOT NULL AS ok`, [name])).rows[0]?.ok === true;

/**
 * Takes the DDL lock for the rest of the transaction, then creates the bookkeeping schema and
 * tables that are missing. Existence is checked first, so a user without CREATE privilege can use
 * bookkeeping tables made by another.
 */
export async function ensureBookkeeping(client: pg.ClientBase): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
  const schema = quoteIdent(BOOKKEEPING_SCHEMA);
  if (!(await exists(client, 'to_regnamespace', schema)))
    await client.query(createSchemaSql(BOOKKEEPING_SCHEMA));
  for (const { table, sql } of bookkeepingTablesSql()) {
    if (!(await exists(client, 'to_regclass', `${schema}.${quoteIdent(table)}`))) await client.query(sql);
  }
}

const SQL = {
  deferKey: `INSERT INTO ${quoteIdent(BOOKKEEPING_SCHEMA)}.deferred_keys (pipeline_id, target) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
  deferredKey: `SELECT 1 FROM ${quoteIdent(BOOKKEEPING_SCHEMA)}.deferred_keys WHERE pipeline_id = $1 AND target = $2`,
  deferredKeys: `SELECT target FROM ${quoteIdent(BOOKKEEPING_SCHEMA)}.deferred_keys WHERE pipeline_id = $1`,
};

/** Targets of this pipeline created without their primary key, by qualified name. */
export async function deferredKeys(client: pg.ClientBase, pipelineId: string): Promise<Set<string>> {
  const { rows } = await client.query<{ target: string }>(SQL.deferredKeys, [pipelineId]);
  return new Set(rows.map((r) => r.target));
}

async function createTarget(
  client: pg.ClientBase,
  source: TableSchema,
  target: TableRef,
  deferKeyFor: string | undefined,
): Promise<void> {
  const { rows } = await client.query<{ missing: string[] | null }>(
    'SELECT array_agg(t) AS missing FROM unnest($1::text[]) t WHERE to_regtype(t) IS NULL',
    [[...new Set(source.columns.map((c) => c.typeName))]],
  );
  if (rows[0]?.missing) {
    // Waiting cannot create a type: a person must, so this is not retried.
    throw validationFailed(
      'source.tables',
      `cannot create ${tableKey(target)}: the types ${rows[0].missing.join(', ')} of ${tableKey(source)} ` +
        'do not exist in the sink database; create them there, or create the target table yourself',
    );
  }
  if (!(await exists(client, 'to_regnamespace', quoteIdent(target.schema)))) {
    await client.query(createSchemaSql(target.schema));
  }
  await client.query(createTableSql(target, source, deferKeyFor === undefined));
  if (deferKeyFor !== undefined) await client.query(SQL.deferKey, [deferKeyFor, qualifiedName(target)]);
}

/**
 * Makes sure the target of `source` can be written, under the lock of `ensureBookkeeping`: creates
 * its schema and table when missing (if allowed), else checks it is a table with every source column
 * and a unique key on the key columns. Returns `source` with the types of the target's columns,
 * which are what values must be cast to (a user-made target may differ from the source). With
 * `deferKeyFor` (a pipeline id), a table it creates gets its primary key only once its snapshot is
 * in (see deferredKeys): rows copied into a table without an index, then one sorted index build,
 * which is faster and leaves the index as compact as the source's.
 */
export async function prepareTarget(
  client: pg.ClientBase,
  source: TableSchema,
  target: TableRef,
  createTables: boolean,
  deferKeyFor?: string,
): Promise<TableSchema> {
  // None of these heals by waiting: the sink's tables need a person, so they are not retried.
  const name = qualifiedName(target);
  if (!(await exists(client, 'to_regclass', name))) {
    if (!createTables) {
      throw validationFailed(
        'sink.connection',
        `target table ${tableKey(target)} of ${tableKey(source)} does not exist and create_tables is false`,
      );
    }
    await createTarget(client, source, target, deferKeyFor);
  }
  const row = (await client.query<TargetRow>(FIND_TARGET, [name, source.keyColumns])).rows[0];
  if (!row || (row.kind !== 'r' && row.kind !== 'p')) {
    throw validationFailed(
      'sink.connection',
      `target ${tableKey(target)} of ${tableKey(source)} is not a table`,
    );
  }
  const types = new Map(Object.entries(row.types ?? {}));
  const missing = source.columns.map((c) => c.name).filter((c) => !types.has(c));
  if (missing.length > 0) {
    throw validationFailed(
      'sink.connection',
      `target table ${tableKey(target)} lacks the columns ${JSON.stringify(missing)} of ${tableKey(source)}`,
    );
  }
  const keyComing =
    !row.has_key &&
    deferKeyFor !== undefined &&
    (await client.query(SQL.deferredKey, [deferKeyFor, name])).rowCount === 1;
  if (!row.has_key && !keyComing) {
    throw validationFailed(
      'sink.connection',
      `target table ${tableKey(target)} has no primary key or unique index on exactly the key columns ` +
        `${JSON.stringify(source.keyColumns)} of ${tableKey(source)}`,
    );
  }
  return {
    ...source,
    columns: source.columns.map((c) => ({ ...c, typeName: types.get(c.name) ?? c.typeName })),
  };
}

const TARGET_COLUMNS = `
SELECT (SELECT coalesce(array_agg(a.attname::text), '{}') FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
  FROM pg_class c
 WHERE c.oid = to_regclass($1)`;

/**
 * What the target of `source` is now, read only: whether it exists, which of the columns of
 * `source` it lacks, and whether it holds no row (read up to its first visible row).
 */
export async function inspectTarget(
  client: pg.ClientBase,
  source: TableSchema,
  target: TableRef,
): Promise<TargetState> {
  const name = qualifiedName(target);
  const found = (await client.query<{ columns: string[] }>(TARGET_COLUMNS, [name])).rows[0];
  if (!found) return { table: source, target, exists: false, missingColumns: [], empty: false };
  const present = new Set(found.columns);
  const { rows } = await client.query<{ empty: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM ${name}) AS empty`,
  );
  return {
    table: source,
    target,
    exists: true,
    missingColumns: source.columns.map((c) => c.name).filter((c) => !present.has(c)),
    empty: rows[0]?.empty === true,
  };
}
