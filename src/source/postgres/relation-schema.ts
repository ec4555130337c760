import type pg from 'pg';
import type { TableSchema } from '../../core/change.js';
import type { RelationInfo } from './pgoutput-decoder.js';

/** A column type as pgoutput describes it. */
export interface TypeRef {
  typeOid: number;
  /** `atttypmod`, -1 when none. */
  typeMod: number;
}

/**
 * `format_type(oid, typmod)` of each pair, in order, in one query: the SQL spelling of a type
 * (e.g. `numeric(12,2)`, `character varying(20)`, `integer[]`).
 */
export async function formatTypes(client: pg.ClientBase, types: TypeRef[]): Promise<string[]> {
  if (types.length === 0) return [];
  const { rows } = await client.query<{ name: string }>(
    `SELECT format_type(t.oid, t.mod) AS name
       FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS t(oid, mod, ord)
      ORDER BY t.ord`,
    [types.map((t) => t.typeOid), types.map((t) => t.typeMod)],
  );
  return rows.map((r) => r.name);
}

/**
 * Turns a pgoutput Relation message into a {@link TableSchema}, for when a relation changes
 * shape mid-stream (e.g. a column was added). Type names come from the source's `format_type`;
 * nullability and, under REPLICA IDENTITY FULL (where every column is flagged as key), the key
 * come from the source's current catalog, defaulting to nullable when a column is gone.
 */
export async function schemaFromRelation(
  client: pg.ClientBase,
  relation: RelationInfo,
): Promise<TableSchema | null> {
  return (await schemasFromRelations(client, [relation]))[0] ?? null;
}

/** {@link schemaFromRelation} of each relation, in order, in two queries for all. */
export async function schemasFromRelations(
  client: pg.ClientBase,
  relations: readonly RelationInfo[],
): Promise<(TableSchema | null)[]> {
  const typeNames = await formatTypes(
    client,
    relations.flatMap((r) => r.columns),
  );
  const { rows } = await client.query<{
    rel: number;
    name: string;
    notnull: boolean;
    pk_position: number | null;
  }>(
    `SELECT a.attrelid::int8 AS rel, a.attname::text AS name, a.attnotnull AS notnull,
            array_position((SELECT i.indkey::int2[] FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary),
                           a.attnum) AS pk_position
       FROM pg_attribute a
      WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped`,
    [[...new Set(relations.map((r) => r.relationId))]],
  );
  const catalogs = new Map<number, Map<string, (typeof rows)[number]>>();
  for (const row of rows) {
    const rel = Number(row.rel);
    const catalog = catalogs.get(rel) ?? new Map<string, (typeof rows)[number]>();
    catalogs.set(rel, catalog);
    catalog.set(row.name, row);
  }
  let typeAt = 0;
  return relations.map((relation) => {
    const names = typeNames.slice(typeAt, typeAt + relation.columns.length);
    typeAt += relation.columns.length;
    const catalog = catalogs.get(relation.relationId) ?? new Map<string, (typeof rows)[number]>();
    // No column left: the table was dropped since (the stream decodes from the WAL, behind the catalog).
    if (catalog.size === 0 && relation.columns.length > 0) return null;
    let keyColumns = relation.columns.filter((c) => c.isKey).map((c) => c.name);
    if (relation.replicaIdentity === 'full') {
      const pk = relation.columns
        .map((c) => ({ name: c.name, position: catalog.get(c.name)?.pk_position ?? null }))
        .filter((c): c is { name: string; position: number } => c.position !== null)
        .sort((a, b) => a.position - b.position)
        .map((c) => c.name);
      if (pk.length > 0) keyColumns = pk;
    }
    const keys = new Set(keyColumns);
    return {
      schema: relation.schema,
      table: relation.table,
      columns: relation.columns.map((c, i) => ({
        name: c.name,
        typeName: names[i] as string,
        typeOid: c.typeOid,
        nullable: !(catalog.get(c.name)?.notnull ?? false),
        isKey: keys.has(c.name),
      })),
      keyColumns,
    };
  });
}

/**
 * The value the rows already in a table have for each of `columns`: PostgreSQL keeps a constant
 * default of ADD COLUMN as the value of the rows already there (attmissingval), which no row
 * change carries to the stream; null when they have none. A column with a volatile default (each
 * row got its own value) is left out.
 */
export async function existingValues(
  client: pg.ClientBase,
  relationId: number,
  columns: readonly string[],
): Promise<Map<string, string | null>> {
  const values = new Map<string, string | null>();
  if (columns.length === 0) return values;
  const { rows } = await client.query<{ name: string; missing: string | null; has_default: boolean }>(
    `SELECT a.attname::text AS name, (a.attmissingval::text::text[])[1] AS missing, a.atthasdef AS has_default
       FROM pg_attribute a WHERE a.attrelid = $1::oid AND a.attname = ANY($2::text[])`,
    [relationId, columns],
  );
  const found = new Map(rows.map((r) => [r.name, r]));
  for (const column of columns) {
    const row = found.get(column);
    if (row?.missing !== null && row?.missing !== undefined) values.set(column, row.missing);
    else if (!row?.has_default) values.set(column, null);
  }
  return values;
}
