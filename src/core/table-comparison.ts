/**
 * The part of the sink contract that lets a SQL sink be verified against its source. Both sides
 * compute, in their own SQL, the same text for each row and hash it (MD5), so that a range of rows
 * is compared by a count and a sum of hashes, and only a differing range is read row by row. The
 * text is each value in a canonical form both servers can print: a sink says, per column, which
 * form its stored value has, or why it cannot be compared exactly; the source prints its value in
 * that form.
 */

import type { ColumnSchema, TableRef } from './change.js';

/**
 * How a value is spelled for comparison:
 * - `text`: the source's own text for it (its output function, the text the change stream carries):
 *   integers, decimals of a fixed scale, uuid, dates, text, and every value a sink keeps as text;
 * - `bool01`: `1` or `0`;
 * - `hex`: bytes in lower-case hexadecimal;
 * - `time_us`: `HH:MM:SS.ffffff`;
 * - `timestamp_us`: `YYYY-MM-DD HH:MM:SS.ffffff`, a time with a zone in UTC.
 */
export type CanonicalForm = 'text' | 'bool01' | 'hex' | 'time_us' | 'timestamp_us';

/** A column compared exactly: the form its value is spelled in, and the SQL spelling it (non-null). */
export interface ComparedValue {
  form: CanonicalForm;
  sql: string;
}

/** A column that cannot be compared exactly, and why: listed as not verified. */
export interface NotCompared {
  reason: string;
}

/** A key column: its value spelled in `text` form, and how to compare it in the source's key order. */
export interface ComparedKey {
  /** SQL for the value's text. */
  sql: string;
  /** SQL of the value as compared for order (`<`, `>=`) in the same order at both sides. */
  order: string;
  /** The SQL literal of a key value given as the source's text, comparable with `order`. */
  literal(text: string): string;
}

/** The SQL a side of a comparison speaks. */
export interface ComparisonDialect {
  table(ref: TableRef): string;
  ident(name: string): string;
  /** `'N'` when `column` is NULL, else `'V'` followed by `value`. */
  tagged(column: string, value: string): string;
  /** The lower-case hexadecimal MD5 of the parts joined by U+001F. */
  rowMd5(parts: readonly string[]): string;
  /** The first 15 hex digits of an MD5 expression as a 60-bit integer, whose sum cannot overflow. */
  md5Prefix(md5: string): string;
}

/** A session reading one side; every value comes back as text (or null). */
export interface ComparisonReader {
  query(sql: string): Promise<(string | null)[][]>;
  close(): Promise<void>;
}

/** What a SQL sink implements to be verified. */
export interface SinkComparison {
  dialect: ComparisonDialect;
  /** The sink's table for a source table. */
  target(table: TableRef): TableRef;
  /** How the sink's stored value of a source column compares. */
  column(column: ColumnSchema): ComparedValue | NotCompared;
  /** How a key column compares, in an order shared with the source; NotCompared when it has none. */
  key(column: ColumnSchema): ComparedKey | NotCompared;
  /** A reading session, apart from the sessions that write. */
  open(): Promise<ComparisonReader>;
}

export const notCompared = (value: ComparedValue | ComparedKey | NotCompared): value is NotCompared =>
  'reason' in value;

/** What the source implements to be compared with a sink. */
export interface SourceComparison {
  dialect: ComparisonDialect;
  /** The source's value of a column, spelled in `form`. */
  value(column: ColumnSchema, form: CanonicalForm): string;
  key(column: ColumnSchema): ComparedKey;
  open(): Promise<SourceComparisonReader>;
}

/** A session reading the source for a comparison. */
export interface SourceComparisonReader extends ComparisonReader {
  /** A source position past the commit of every transaction the statements before it saw. */
  position(): Promise<bigint>;
  /** About how many rows the table holds, from the source's statistics. */
  rowsEstimate(table: TableRef): Promise<number>;
  /**
   * Runs `sql` in a snapshot of its own, and says which transactions that snapshot sees (the
   * source's text for them, see SnapshotVisibility) and a position past the commit of each.
   */
  inSnapshot(sql: string): Promise<{ rows: (string | null)[][]; visibility: string; lsn: bigint }>;
  /** The clause reading a sample of about `percent` of a table's rows (cheap on a large table). */
  sample(percent: number): string;
}
