import type { ChangeEvent, ColumnValue, EncodedRow, Row, TableRef } from '../../core/change.js';
import { type RelationCache, readRow, type TransactionInfo } from './change-mapper.js';
import { PgoutputProtocolError } from './errors.js';
import { Reader, type RelationInfo } from './pgoutput-decoder.js';

const NULL = 0x6e; // n
const TEXT = 0x74; // t
const NEW = 0x4e; // N
const TAB = 0x09;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const BACKSLASH = 0x5c;
const LETTER_N = 0x4e;

// Rows of one relation description share one array of names: a sink tells shapes apart by identity.
const namesOf = new WeakMap<RelationInfo, readonly string[]>();

/**
 * The new tuple of a pgoutput Insert as it came (its bytes, never changed after): its values are
 * turned into strings only when read, and into COPY text straight from the bytes.
 */
export class PgoutputRow implements EncodedRow {
  readonly columns: readonly string[];

  /**
   * Whether the tuple from `start` (its column count) to `end` (the end of the message) is whole and
   * holds only text and NULL values, the relation's columns of them; anything else (an unchanged
   * TOAST value, a malformed tuple) is left to the whole decode, which deals with it or names it.
   */
  static holdsTextOnly(buffer: Buffer, start: number, end: number, relation: RelationInfo): boolean {
    if (start + 2 > end) return false;
    const count = buffer.readInt16BE(start);
    if (count !== relation.columns.length) return false;
    let at = start + 2;
    for (let i = 0; i < count; i++) {
      if (at >= end) return false;
      const kind = buffer[at++];
      if (kind === NULL) continue;
      if (kind !== TEXT || at + 4 > end) return false;
      const length = buffer.readInt32BE(at);
      at += 4 + length;
      if (length < 0 || at > end) return false;
    }
    return at === end;
  }

  /** The tuple from `start` to `end`, which `holdsTextOnly` accepted; its bytes never change after. */
  constructor(
    private readonly buffer: Buffer,
    private readonly start: number,
    private readonly end: number,
    private readonly relation: RelationInfo,
  ) {
    let names = namesOf.get(relation);
    if (!names) {
      names = relation.columns.map((c) => c.name);
      namesOf.set(relation, names);
    }
    this.columns = names;
  }

  get byteLength(): number {
    return this.end - this.start;
  }

  // An escaped byte takes two, a NULL's 1-byte header becomes `\N` and a TAB, the line a newline.
  get copyTextBound(): number {
    return 2 * (this.end - this.start) + 3 * this.columns.length + 1;
  }

  /** Where column `i` starts: its kind byte. */
  private columnAt(i: number): number {
    const buffer = this.buffer;
    let at = this.start + 2;
    for (let c = 0; c < i; c++) at += buffer[at] === NULL ? 1 : 5 + buffer.readInt32BE(at + 1);
    return at;
  }

  text(i: number): ColumnValue {
    const buffer = this.buffer;
    const at = this.columnAt(i);
    if (buffer[at] === NULL) return null;
    const length = buffer.readInt32BE(at + 1);
    return buffer.toString('utf8', at + 5, at + 5 + length);
  }

  integer(i: number): number {
    const buffer = this.buffer;
    const at = this.columnAt(i);
    if (buffer[at] === NULL) return Number.NaN;
    const stop = at + 5 + buffer.readInt32BE(at + 1);
    let from = at + 5;
    const negative = buffer[from] === 0x2d; // -
    if (negative) from++;
    // Beyond 15 digits a number may not be exact: NaN, as for anything but digits.
    if (from === stop || stop - from > 15) return Number.NaN;
    let n = 0;
    for (let b = from; b < stop; b++) {
      const digit = (buffer[b] as number) - 0x30;
      if (digit < 0 || digit > 9) return Number.NaN;
      n = n * 10 + digit;
    }
    return negative ? -n : n;
  }

  values(): ColumnValue[] {
    const buffer = this.buffer;
    const values = new Array<ColumnValue>(this.columns.length);
    let at = this.start + 2;
    for (let c = 0; c < values.length; c++) {
      if (buffer[at] === NULL) {
        values[c] = null;
        at++;
        continue;
      }
      const stop = at + 5 + buffer.readInt32BE(at + 1);
      values[c] = buffer.toString('utf8', at + 5, stop);
      at = stop;
    }
    return values;
  }

  decode(): Row {
    return readRow(
      new Reader(this.buffer).reset(this.buffer, this.start, this.end, this.start),
      this.relation,
      false,
    ).row;
  }

  writeCopyText(out: Buffer, at: number): number {
    const buffer = this.buffer;
    const count = this.columns.length;
    let from = this.start + 2;
    for (let c = 0; c < count; c++) {
      if (c > 0) out[at++] = TAB;
      if (buffer[from] === NULL) {
        out[at++] = BACKSLASH;
        out[at++] = LETTER_N;
        from++;
        continue;
      }
      const stop = from + 5 + buffer.readInt32BE(from + 1);
      // Values are short: a byte loop beats a copy call per value, and finds what COPY escapes.
      for (let i = from + 5; i < stop; i++) {
        const byte = buffer[i] as number;
        if (byte === BACKSLASH || byte === NEWLINE || byte === CARRIAGE_RETURN || byte === TAB) {
          out[at++] = BACKSLASH;
          out[at++] = byte === BACKSLASH ? BACKSLASH : byte === NEWLINE ? 0x6e : byte === TAB ? 0x74 : 0x72;
        } else {
          out[at++] = byte;
        }
      }
      from = stop;
    }
    out[at++] = NEWLINE;
    return at;
  }
}

/**
 * An insert whose new row stays encoded until something reads `after`. Its fields are the
 * change's own (a copy made by spreading it has no `after` unless it sets one; `toJSON` has it).
 */
export class EncodedInsert implements ChangeEvent {
  readonly op = 'insert' as const;
  #row: PgoutputRow | undefined;
  #after: Row | undefined;

  constructor(
    public table: TableRef,
    public xid: number,
    public commitLsn: bigint,
    public commitTime: string,
    row: PgoutputRow,
  ) {
    this.#row = row;
  }

  get encoded(): EncodedRow | undefined {
    return this.#row;
  }

  get after(): Row {
    if (this.#after === undefined) this.#after = (this.#row as PgoutputRow).decode();
    return this.#after;
  }

  set after(row: Row) {
    this.#after = row;
    this.#row = undefined;
  }

  toJSON(): ChangeEvent {
    const { op, table, xid, commitLsn, commitTime, after } = this;
    return { op, table, xid, commitLsn, commitTime, after };
  }
}

const SLAB_BYTES = 256 * 1024;

/**
 * Where kept tuples are copied to, one after the other in slabs: a kept tuple holds only its own
 * bytes, not the whole read it came in (with the other messages of its transaction, their headers,
 * and changes of other tables), and the reads die young.
 */
export class TupleSlabs {
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;

  /** The slab the last copy went into. */
  get current(): Buffer {
    return this.slab;
  }

  /** Copies `source[start, end)` into the current slab (a new one when it lacks room); returns where. */
  copy(source: Buffer, start: number, end: number): number {
    const length = end - start;
    if (this.slab.length - this.used < length) {
      this.slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, length));
      this.used = 0;
    }
    const at = this.used;
    source.copy(this.slab, at, start, end);
    this.used += length;
    return at;
  }
}

/**
 * An Insert message (`r` after its tag and xid) as an EncodedInsert, its tuple copied into
 * `slabs`; undefined when its tuple is not one (`r` is then where it was).
 */
export function encodedInsert(
  r: Reader,
  relations: RelationCache,
  tx: TransactionInfo,
  slabs: TupleSlabs,
): ChangeEvent | undefined {
  const at = r.offset;
  const { info, table } = relations.get(r.uint32());
  const marker = r.uint8();
  if (marker !== NEW)
    throw new PgoutputProtocolError(`insert: expected 'N', got '${String.fromCharCode(marker)}'`);
  const buffer = r.buffer;
  const end = r.end;
  if (!PgoutputRow.holdsTextOnly(buffer, r.offset, end, info)) {
    r.offset = at;
    return undefined;
  }
  const kept = slabs.copy(buffer, r.offset, end);
  const row = new PgoutputRow(slabs.current, kept, kept + (end - r.offset), info);
  return new EncodedInsert(table, tx.xid, tx.commitLsn, tx.commitTime, row);
}
