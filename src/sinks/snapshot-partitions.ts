import { type TableRef, tableKey } from '../core/change.js';
import type { SnapshotPartition } from '../core/sink.js';

/**
 * The done partitions from a SQL sink's markers (`table_name` being `tableKey` of the source
 * table): a table the sink knows is named as it knows it, any other split at its first dot.
 */
export function partitionsOfMarkers(
  rows: readonly { table_name: string; partition_id: string }[],
  known: Iterable<TableRef>,
): SnapshotPartition[] {
  const byKey = new Map([...known].map((t) => [tableKey(t), t]));
  return rows.map((row) => {
    const source = byKey.get(row.table_name);
    const dot = row.table_name.indexOf('.');
    const table = source
      ? { schema: source.schema, table: source.table }
      : { schema: row.table_name.slice(0, dot), table: row.table_name.slice(dot + 1) };
    return { table, partitionId: row.partition_id };
  });
}
