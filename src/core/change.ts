/**
 * The data-plane vocabulary shared by sources and sinks. Values travel as PostgreSQL's text
 * representation (what pgoutput and COPY text format carry), which is lossless for every type;
 * the sink casts them to the column type.
 */

/** A column value in PostgreSQL text form; null is SQL NULL. */
export type ColumnValue = string | null;

/** A row as column name → text value. */
export type Row = Record<string, ColumnValue>;

export interface TableRef {
  schema: string;
  table: string;
}

// Every change of a table shares one ref (the source's), and its key is asked for per change.
const keys = new WeakMap<TableRef, string>();

/** `schema.table`, the key tables go by in definitions, progress and the store. */
export function tableKey(ref: TableRef): string {
  let key = keys.get(ref);
  if (key === undefined) {
    key = `${ref.schema}.${ref.table}`;
    keys.set(ref, key);
  }
  return key;
}

/** One column of a source table, as the sink needs it to create and write its copy. */
export interface ColumnSchema {
  name: string;
  /** `format_type(atttypid, atttypmod)` of the source, e.g. `numeric(12,2)`, `timestamp with time zone`, `text[]`. */
  typeName: string;
  typeOid: number;
  nullable: boolean;
  /** Part of the primary key (or of the replica identity index). */
  isKey: boolean;
}

export interface TableSchema extends TableRef {
  /** Columns in source ordinal order (dropped and generated columns excluded). */
  columns: ColumnSchema[];
  /** Key column names in key order; never empty for a replicated table. */
  keyColumns: string[];
  /**
   * Stored generated columns of the source table. Their values are not replicated (pgoutput does
   * not send them): a sink that can computes them itself from the same expression.
   */
  generated?: GeneratedColumn[];
}

/** A `GENERATED ALWAYS AS (expression) STORED` column. */
export interface GeneratedColumn {
  name: string;
  typeName: string;
  /** The expression as the source prints it (pg_get_expr). */
  expression: string;
}

export type ChangeOp = 'insert' | 'update' | 'delete' | 'truncate';

/** Every operation a change can carry. */
export const CHANGE_OPS: readonly ChangeOp[] = ['insert', 'update', 'delete', 'truncate'];

/** One row change (or a truncate) of a committed source transaction. */
export interface ChangeEvent {
  op: ChangeOp;
  table: TableRef;
  /** Key of the row before the change: update (when the key changed or identity is FULL) and delete. */
  key?: Row;
  /** Old row image, when the table's REPLICA IDENTITY is FULL. */
  before?: Row;
  /** New row image for insert and update; unchanged TOAST columns are absent from it. */
  after?: Row;
  /** Columns of `after` whose value did not change and was not sent (TOAST): the sink must keep its value. */
  unchangedToast?: string[];
  /**
   * An insert's new row still in its source's encoding, when the source kept it so: a sink that can
   * write it as it came (a COPY of the same text) does so without making a string of each value;
   * `after` still reads the row whole, decoded on first reading.
   */
  encoded?: EncodedRow;
  /** For truncate: every table truncated together, `table` being the first. */
  tables?: TableRef[];
  /** LSN of its transaction's commit record: the same for every change of a transaction. */
  commitLsn: bigint;
  xid: number;
  /** ISO 8601 commit time of the transaction at the source. */
  commitTime: string;
}

/** A row in its source's text encoding (UTF-8 text per value, or NULL), columns in source order. */
export interface EncodedRow {
  /** The column names, in the order of the values: the same array for every row of one shape. */
  readonly columns: readonly string[];
  /** The bytes of the values. */
  readonly byteLength: number;
  /** The value of column `i`, null for SQL NULL. */
  text(i: number): ColumnValue;
  /** Every value, in column order. */
  values(): ColumnValue[];
  /**
   * Column `i` as a number when its text is a plain integer of up to 15 digits (exactly what
   * `Number()` of its text gives), NaN for anything else.
   */
  integer(i: number): number;
  /** The most bytes `writeCopyText` can write. */
  readonly copyTextBound: number;
  /**
   * Writes the row as one line of COPY text (escaped, TAB-separated, `\N` for NULL, ending in a
   * newline) into `out` from `at`, which has `copyTextBound` bytes of room; returns where it ended.
   */
  writeCopyText(out: Buffer, at: number): number;
}

/** Where a sink has durably got to. */
export interface Checkpoint {
  /** Every transaction whose commit end LSN is at or before this is durable in the sink. */
  lsn: bigint;
  /** Fencing epoch of the worker that wrote it. */
  epoch: number;
}

// Measured for every change: no array is made for it.
const rowBytes = (row: ChangeEvent['after']) => {
  let bytes = 0;
  if (row) {
    for (const column in row) {
      const v = row[column];
      bytes += v === null || v === undefined ? 1 : v.length;
    }
  }
  return bytes;
};

/**
 * The bytes a change counts for where its size bounds memory (a batch, a held piece, a replay read
 * ahead): its values' lengths and a little for the event itself.
 */
export const valueBytes = (change: ChangeEvent): number =>
  64 +
  // An encoded row is counted as it is, not decoded for it.
  (change.encoded ? change.encoded.byteLength : rowBytes(change.after)) +
  rowBytes(change.key) +
  rowBytes(change.before);
