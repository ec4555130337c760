/** What a verification says of a table and of a whole run: the shapes the API answers with. */

/** How a row differs: not in the sink, only in the sink, or in both with other values. */
export type DifferenceKind = 'missing' | 'extra' | 'changed';

export type TableStatus = 'matched' | 'differs' | 'not_verified';

export interface TableVerdict {
  /** `schema.table` at the source. */
  table: string;
  status: TableStatus;
  /** Why the table is not verified, or what qualifies its verdict. */
  reason?: string;
  /** Columns left out of the comparison, each with why. */
  columns_not_verified: { column: string; reason: string }[];
  /** Rows counted at each side, each range at its own moment. */
  source_rows: number;
  sink_rows: number;
  missing: number;
  extra: number;
  changed: number;
  /** Rows the source changed at every re-read, compared neither way. */
  unsettled: number;
  /** Up to 100 keys, the differing ones first, by key column. */
  sample_keys: { kind: DifferenceKind | 'unsettled'; key: Record<string, string> }[];
  /** Rows read at both sides. */
  rows_read: number;
}

/** The share of the source's time a verification takes unless asked otherwise: no rest (docs/operations/verify-and-repair.md). */
export const DEFAULT_SOURCE_SHARE = 1;

/** The whole run's verdict: the worst of its tables'. */
export function overallResult(tables: readonly TableVerdict[]): TableStatus {
  if (tables.some((t) => t.status === 'differs')) return 'differs';
  if (tables.some((t) => t.status === 'not_verified')) return 'not_verified';
  return 'matched';
}

/** A table's verdict before anything is found: matched, nothing counted. */
export function emptyVerdict(table: string): TableVerdict {
  return {
    table,
    status: 'matched',
    columns_not_verified: [],
    source_rows: 0,
    sink_rows: 0,
    missing: 0,
    extra: 0,
    changed: 0,
    unsettled: 0,
    sample_keys: [],
    rows_read: 0,
  };
}
