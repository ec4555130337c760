import pg from 'pg';
import type { TableSchema } from '../../core/change.js';
import type { CopyFormat } from '../../core/copy-binary.js';
import type { PartitionPlan, PlannedPartition } from '../../core/source.js';

const quoted = (table: TableSchema) =>
  `${pg.escapeIdentifier(table.schema)}.${pg.escapeIdentifier(table.table)}`;

// From the table's statistics (pg_class.reltuples), or counted when it was never analysed.
async function estimateRows(client: pg.ClientBase, table: TableSchema): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    'SELECT reltuples::bigint AS n FROM pg_class WHERE oid = $1::regclass',
    [quoted(table)],
  );
  const estimate = Number(rows[0]?.n ?? -1);
  if (estimate >= 0) return estimate;
  const counted = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoted(table)}`);
  return Number(counted.rows[0]?.n ?? 0);
}

/**
 * Splits a table into ranges of its primary key, about `targetRows` rows each, from quantiles of a
 * sample. Key ranges rather than ctid ranges: an updated row keeps its key but moves to another
 * ctid, and a snapshot resumed under a newer MVCC snapshot must not see a row in two partitions.
 * Tables with a composite key, or small ones, get one partition.
 */
export async function planPartitions(
  client: pg.ClientBase,
  table: TableSchema,
  options: { targetRows: number; maxPartitions: number },
): Promise<PartitionPlan> {
  const rowsEstimate = await estimateRows(client, table);
  const wanted = Math.min(options.maxPartitions, Math.ceil(rowsEstimate / options.targetRows));
  const whole: PartitionPlan = { rowsEstimate, partitions: [{ partitionId: '0', lower: null, upper: null }] };
  if (wanted < 2 || table.keyColumns.length !== 1) return whole;

  const key = pg.escapeIdentifier(table.keyColumns[0] as string);
  const fractions = Array.from({ length: wanted - 1 }, (_, i) => (i + 1) / wanted);
  // Sample about 100k rows: enough for even ranges, cheap on any table size.
  const percent = Math.min(100, Math.max(0.01, (100_000 / Math.max(rowsEstimate, 1)) * 100));
  const { rows } = await client.query<{ bounds: string[] | null }>(
    `SELECT (percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY ${key}))::text[] AS bounds
       FROM ${quoted(table)} TABLESAMPLE SYSTEM (${percent})`,
    [fractions],
  );
  const bounds = [...new Set((rows[0]?.bounds ?? []).filter((b): b is string => b !== null))];
  if (bounds.length === 0) return whole;
  const edges: (string | null)[] = [null, ...bounds, null];
  const partitions = edges.slice(0, -1).map((lower, i) => ({
    partitionId: String(i),
    lower,
    upper: edges[i + 1] ?? null,
  }));
  return { rowsEstimate, partitions };
}

/** The COPY that reads one partition, in `table.columns` order. */
export function partitionCopySql(
  table: TableSchema,
  partition: PlannedPartition,
  format: CopyFormat = 'text',
): string {
  const columns = table.columns.map((c) => pg.escapeIdentifier(c.name)).join(', ');
  const conditions: string[] = [];
  if (partition.lower !== null || partition.upper !== null) {
    const keyColumn = table.columns.find((c) => c.name === table.keyColumns[0]);
    if (!keyColumn) throw new Error(`key column of ${table.schema}.${table.table} not found`);
    const key = pg.escapeIdentifier(keyColumn.name);
    const literal = (v: string) => `${pg.escapeLiteral(v)}::${keyColumn.typeName}`;
    if (partition.lower !== null) conditions.push(`${key} >= ${literal(partition.lower)}`);
    if (partition.upper !== null) conditions.push(`${key} < ${literal(partition.upper)}`);
  }
  const where = conditions.length > 0 ? ` WHERE ${conditions.join(' AND ')}` : '';
  const options = format === 'binary' ? ' (FORMAT binary)' : '';
  return `COPY (SELECT ${columns} FROM ${quoted(table)}${where}) TO STDOUT${options}`;
}

/** The COPY that reads the rows of `keys` (each the key's values as source text), in `table.columns` order. */
export function keysCopySql(table: TableSchema, keys: readonly string[][]): string {
  const columns = table.columns.map((c) => pg.escapeIdentifier(c.name)).join(', ');
  const keyColumns = table.keyColumns.map((name) => {
    const column = table.columns.find((c) => c.name === name);
    if (!column) throw new Error(`key column ${name} of ${table.schema}.${table.table} not found`);
    return column;
  });
  const tuple = (values: readonly string[]) =>
    `(${keyColumns.map((c, i) => `${pg.escapeLiteral(values[i] ?? '')}::${c.typeName}`).join(', ')})`;
  const names = `(${keyColumns.map((c) => pg.escapeIdentifier(c.name)).join(', ')})`;
  return `COPY (SELECT ${columns} FROM ${quoted(table)} WHERE ${names} IN (${keys.map(tuple).join(', ')})) TO STDOUT`;
}
