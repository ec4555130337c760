import type { Readable } from 'node:stream';
import { type TableRef, type TableSchema, tableKey } from '../core/change.js';
import type { SnapshotPartition } from '../core/sink.js';

/**
 * Writes one snapshot partition from its COPY text, owning the stream as the sink contract says:
 * until it is read, an error it emits must not become an uncaught exception, and when it cannot be
 * written, whatever feeds it (a source COPY) is released.
 */
export async function writingPartition<T>(
  table: TableSchema,
  partition: SnapshotPartition,
  copyText: Readable,
  write: () => Promise<T>,
): Promise<T> {
  if (!sameTable(partition.table, table)) {
    throw new Error(`partition of ${tableKey(partition.table)} given for table ${tableKey(table)}`);
  }
  const parked = () => {};
  copyText.on('error', parked);
  try {
    return await write();
  } catch (error) {
    if (!copyText.destroyed) copyText.destroy();
    throw error;
  } finally {
    copyText.off('error', parked);
  }
}

const sameTable = (a: TableRef, b: TableRef) => a.schema === b.schema && a.table === b.table;

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
