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
