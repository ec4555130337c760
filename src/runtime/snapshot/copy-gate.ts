import type { DatabasePool } from 'slonik';
import { type ChangeEvent, type TableSchema, tableKey } from '../../core/change.js';
import { parseLsn } from '../../core/lsn.js';
import { SnapshotVisibility } from '../../core/snapshot-visibility.js';
import type { TransactionVisibility } from '../../core/source.js';
import { type PartitionRow, snapshotPartitionsStore } from '../../store/snapshot-partitions-store.js';
import { type KeyOrder, keyOrderOf } from './key-order.js';

/** What the stream does with a change of a copied table. */
export type CopyRoute = 'apply' | 'skip' | 'copy-again';

interface GatedPartition {
  lower: string | null;
  upper: string | null;
  /** The snapshot it was copied in; null when that sees nothing the stream carries. */
  visibility: TransactionVisibility | null;
}

interface TableGate {
  keyColumn: string;
  order: KeyOrder | undefined;
  /** In key order, as planned. */
  partitions: GatedPartition[];
  /** The distinct snapshots of the partitions. */
  visibilities: TransactionVisibility[];
  /** Every partition copied in one snapshot: no key needs looking up. */
  uniform: boolean;
}

/**
 * Keeps the stream from applying again what a copy already holds. A table copied (or its copy
 * resumed) in a snapshot exported while the slot existed is copied as of a point after the
 * stream's start, so the stream replays changes the copy already has; applied again, they would
 * take rows back to older versions until the stream caught up. Each partition was copied in one
 * snapshot, noted in the store: a change whose transaction that snapshot sees is skipped. When
 * the partitions of a table were copied in different snapshots (a copy resumed after a crash),
 * the change's key says which partition, and so which snapshot, decides.
 */
export class CopyGate {
  private constructor(private readonly tables: Map<string, TableGate>) {}

  /** The gate for a stream starting after `streamFrom`, from the notes of the pipeline's copies. */
  static async load(
    pool: DatabasePool,
    pipelineId: string,
    schemas: readonly TableSchema[],
    streamFrom: bigint,
  ): Promise<CopyGate> {
    return CopyGate.of(schemas, await snapshotPartitionsStore.list(pool, pipelineId), streamFrom);
  }

  /** The gate from the partitions' rows (see `load`). */
  static of(schemas: readonly TableSchema[], rows: readonly PartitionRow[], streamFrom: bigint): CopyGate {
    const byTable = new Map<string, PartitionRow[]>();
    for (const row of rows) {
      byTable.set(row.table_name, [...(byTable.get(row.table_name) ?? []), row]);
    }
    const tables = new Map<string, TableGate>();
    for (const schema of schemas) {
      const gate = tableGate(schema, byTable.get(tableKey(schema)) ?? [], streamFrom);
      if (gate) tables.set(tableKey(schema), gate);
    }
    return new CopyGate(tables);
  }

  /** Whether any table is gated. */
  get active(): boolean {
    return this.tables.size > 0;
  }

  /** A table copied again (a backfill) is gated by that copy instead. */
  forget(table: string): void {
    this.tables.delete(table);
  }

  /**
   * 'skip' for a change the copy holds; 'copy-again' for a truncate that some partitions hold and
   * others not, which no single action can apply (the table is to be copied again).
   */
  route(change: ChangeEvent): CopyRoute {
    const gate = this.tables.get(tableKey(change.table));
    if (gate === undefined) return 'apply';
    if (!gate.visibilities.some((v) => v.sees(change.xid))) return 'apply';
    if (gate.uniform) return 'skip';
    if (change.op === 'truncate') return 'copy-again';
    // Skipped only when every row it touches lies in a partition whose copy holds it: when in
    // doubt, applied (a replay the stream corrects, where a wrong skip would lose the change).
    const keys = [
      change.after?.[gate.keyColumn],
      change.key?.[gate.keyColumn],
      change.before?.[gate.keyColumn],
    ];
    let located = false;
    for (const key of keys) {
      if (key === undefined) continue;
      if (key === null || !gate.order) return 'apply';
      const partition = locate(gate.partitions, key, gate.order);
      if (!partition?.visibility?.sees(change.xid)) return 'apply';
      located = true;
    }
    return located ? 'skip' : 'apply';
  }
}

function tableGate(
  schema: TableSchema,
  rows: readonly PartitionRow[],
  streamFrom: bigint,
): TableGate | undefined {
  const parsed = new Map<string, TransactionVisibility>();
  // A snapshot stamped at or before the stream's start sees nothing the stream carries.
  const visibilityOf = (row: PartitionRow) => {
    if (row.copied_in_visibility === null || row.copied_in_lsn === null) return null;
    if (parseLsn(row.copied_in_lsn) <= streamFrom) return null;
    let visibility = parsed.get(row.copied_in_visibility);
    if (!visibility) {
      visibility = SnapshotVisibility.parse(row.copied_in_visibility);
      parsed.set(row.copied_in_visibility, visibility);
    }
    return visibility;
  };
  const partitions = rows.map((row) => ({
    lower: row.lower_bound,
    upper: row.upper_bound,
    visibility: visibilityOf(row),
  }));
  if (parsed.size === 0) return undefined;
  const keyColumn = schema.keyColumns[0] as string;
  const typeName = schema.columns.find((c) => c.name === keyColumn)?.typeName ?? '';
  return {
    keyColumn,
    order: schema.keyColumns.length === 1 ? keyOrderOf(typeName) : undefined,
    partitions,
    visibilities: [...parsed.values()],
    uniform: parsed.size === 1 && partitions.every((p) => p.visibility !== null),
  };
}

/** The partition whose range holds `key` (lower <= key < upper, a null bound open). */
function locate(
  partitions: readonly GatedPartition[],
  key: string,
  order: KeyOrder,
): GatedPartition | undefined {
  let low = 0;
  let high = partitions.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const p = partitions[mid] as GatedPartition;
    if (p.lower !== null && order(key, p.lower) < 0) high = mid - 1;
    else if (p.upper !== null && order(key, p.upper) >= 0) low = mid + 1;
    else return p;
  }
  return undefined;
}
