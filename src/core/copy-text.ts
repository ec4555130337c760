/**
 * Reader and writer of PostgreSQL's COPY text format, the bulk format of snapshots: one row per line ending in
 * a newline, fields separated by TAB, `\N` for NULL, backslash escapes (`\\`, `\t`, `\n`, `\r`, `\b`,
 * `\f`, `\v`, octal `\123`, hex `\x41`; a backslash before any other character, newline and TAB
 * included, stands for that character), UTF-8. Escaped bytes (octal, hex) are bytes of the UTF-8
 * text, as COPY FROM reads them: `\303\251` is `é`. A line `\.` alone ends the data.
 *
 * Lines and fields are sliced out of the decoded text; only a field holding a backslash is rebuilt.
 * The writer escapes only what must be: backslash, newline, carriage return and TAB.
 */
import type { ColumnSchema, ColumnValue, EncodedRow, Row } from './change.js';

const TAB = 9;
const BACKSLASH = 92;

/** Malformed COPY text: names the line (1-based, counting the newlines escaped inside rows). */
export class CopyTextError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`COPY text line ${line}: ${message}`);
    this.name = 'CopyTextError';
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The fields of one line (without its newline): text, or null for `\N`. */
export function parseCopyTextLine(line: string): ColumnValue[] {
  const fields: ColumnValue[] = [];
  splitFields(line, fields);
  return fields;
}

/** Splits `line` into `out` (reused between lines, so not truncated); returns the number of fields. */
function splitFields(line: string, out: ColumnValue[]): number {
  const length = line.length;
  let n = 0;
  let start = 0;
  let backslash = line.indexOf('\\');
  for (;;) {
    let end = line.indexOf('\t', start);
    if (end === -1) end = length;
    if (backslash === -1 || backslash >= end) {
      out[n++] = line.slice(start, end);
    } else if (backslash === start && end === start + 2 && line.charCodeAt(start + 1) === 78 /* N */) {
      out[n++] = null;
      backslash = line.indexOf('\\', end);
    } else {
      // `\` + TAB is a TAB of the data: find the field's end past its escapes.
      let i = backslash;
      while (i < length) {
        const c = line.charCodeAt(i);
        if (c === TAB) break;
        if (c === BACKSLASH) {
          if (i + 1 === length) throw new Error('a backslash ends the line');
          i += 2;
        } else {
          i++;
        }
      }
      end = i;
      out[n++] = unescapeField(line, start, end);
      backslash = line.indexOf('\\', end);
    }
    if (end === length) return n;
    start = end + 1;
  }
}

const SIMPLE_ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

const isOctal = (c: number) => c >= 48 && c <= 55;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** `line[start, end)`, a field holding at least one backslash, de-escaped. */
function unescapeField(line: string, start: number, end: number): string {
  // Text pieces, and bytes at or above 0x80 (escaped UTF-8) as numbers.
  const parts: (string | number)[] = [];
  let rawBytes = false;
  let from = start;
  let i = line.indexOf('\\', start);
  while (i !== -1 && i < end) {
    if (i > from) parts.push(line.slice(from, i));
    const c = line.charCodeAt(i + 1);
    let next = i + 2;
    let byte = -1;
    if (isOctal(c)) {
      byte = c - 48;
      for (let digits = 1; digits < 3 && next < end && isOctal(line.charCodeAt(next)); digits++)
        byte = byte * 8 + line.charCodeAt(next++) - 48;
      byte &= 0xff;
    } else if (c === 120 /* x */ && next < end && hexValue(line.charCodeAt(next)) >= 0) {
      byte = hexValue(line.charCodeAt(next++));
      const low = next < end ? hexValue(line.charCodeAt(next)) : -1;
      if (low >= 0) {
        byte = byte * 16 + low;
        next++;
      }
    } else {
      // The escaped character as itself, both halves of a surrogate pair.
      const escaped = String.fromCodePoint(line.codePointAt(i + 1) as number);
      parts.push(SIMPLE_ESCAPES[escaped] ?? escaped);
      next = i + 1 + escaped.length;
    }
    if (byte >= 0x80) {
      parts.push(byte);
      rawBytes = true;
    } else if (byte >= 0) {
      parts.push(String.fromCharCode(byte));
    }
    from = next;
    i = line.indexOf('\\', next);
  }
  if (from < end) parts.push(line.slice(from, end));
  if (!rawBytes) return parts.join('');
  const buffer = Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.of(part))),
  );
  try {
    return strictUtf8.decode(buffer);
  } catch {
    throw new Error('escaped bytes are not valid UTF-8');
  }
}

function trailingBackslashes(text: string, end: number, start: number): number {
  let i = end;
  while (i > start && text.charCodeAt(i - 1) === BACKSLASH) i--;
  return end - i;
}

/** Cuts decoded text into lines, lines into rows; keeps the unfinished line between chunks. */
class CopyTextReader {
  /** Full batches, oldest first. */
  readonly ready: Row[][] = [];
  private batch: Row[] = [];
  // The unfinished line, in pieces so that a long line over many chunks is joined only once.
  private pieces: string[] = [];
  // Whether the pieces end in an odd number of backslashes (then a newline right after is escaped).
  private piecesEscape = false;
  private lineNumber = 1;
  private escapedNewlines = 0;
  private ended = false;
  private readonly fields: ColumnValue[] = [];
  private readonly names: string[];
  private readonly plainNames: boolean;

  constructor(
    columns: readonly Pick<ColumnSchema, 'name'>[],
    private readonly batchRows: number,
  ) {
    this.names = columns.map((column) => column.name);
    this.plainNames = !this.names.includes('__proto__');
  }

  get line(): number {
    return this.lineNumber + this.escapedNewlines;
  }

  push(text: string): void {
    if (this.ended || text === '') return;
    let from = 0;
    let search = 0;
    for (;;) {
      const newline = text.indexOf('\n', search);
      if (newline === -1) break;
      search = newline + 1;
      const run = trailingBackslashes(text, newline, from);
      const odd = (run % 2 === 1) !== (run === newline - from && from === 0 && this.piecesEscape);
      if (odd) {
        this.escapedNewlines++;
        continue;
      }
      const tail = text.slice(from, newline);
      let line = tail;
      if (this.pieces.length > 0) {
        this.pieces.push(tail);
        line = this.pieces.join('');
        this.pieces.length = 0;
        this.piecesEscape = false;
      }
      from = search;
      this.addLine(line);
      if (this.ended) return;
    }
    if (from < text.length) {
      const piece = from === 0 ? text : text.slice(from);
      const run = trailingBackslashes(piece, piece.length, 0);
      this.piecesEscape = run === piece.length ? this.piecesEscape !== (run % 2 === 1) : run % 2 === 1;
      this.pieces.push(piece);
    }
  }

  /** At the end of the data: the last line may lack its newline. */
  finish(): void {
    if (this.ended || this.pieces.length === 0) return;
    if (this.piecesEscape) throw new CopyTextError(this.line, 'the data ends in a backslash');
    const line = this.pieces.join('');
    this.pieces.length = 0;
    this.addLine(line);
  }

  /** Rows not yet handed out as a full batch. */
  rest(): Row[] {
    const rows = this.batch;
    this.batch = [];
    return rows;
  }

  private addLine(line: string): void {
    const number = this.lineNumber;
    this.lineNumber += 1 + this.escapedNewlines;
    this.escapedNewlines = 0;
    if (line === '\\.') {
      this.ended = true; // the end-of-data marker: what follows is not data
      return;
    }
    const names = this.names;
    let count: number;
    try {
      count = names.length === 0 && line === '' ? 0 : splitFields(line, this.fields);
    } catch (error) {
      throw new CopyTextError(number, (error as Error).message);
    }
    if (count !== names.length)
      throw new CopyTextError(number, `expected ${names.length} fields, found ${count}`);
    const row: Row = {};
    const fields = this.fields;
    if (this.plainNames) {
      for (let i = 0; i < count; i++) row[names[i] as string] = fields[i] as ColumnValue;
    } else {
      for (let i = 0; i < count; i++)
        Object.defineProperty(row, names[i] as string, {
          value: fields[i],
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    this.batch.push(row);
    if (this.batch.length >= this.batchRows) {
      this.ready.push(this.batch);
      this.batch = [];
    }
  }
}

/**
 * The rows of a COPY text stream (UTF-8 bytes, or strings), in batches of `batchRows` (the last one
 * may be smaller; none is empty), as column name → text or null, in the order of `columns`, which
 * are the fields of a line. A line with another number of fields, a malformed escape or invalid
 * UTF-8 throws a CopyTextError naming the line. Chunks may split rows and characters anywhere.
 */
export async function* copyTextRows(
  stream: AsyncIterable<Uint8Array | string>,
  columns: readonly Pick<ColumnSchema, 'name'>[],
  batchRows = 1000,
): AsyncGenerator<Row[]> {
  if (!Number.isInteger(batchRows) || batchRows < 1)
    throw new RangeError(`batchRows must be a positive integer, not ${batchRows}`);
  const reader = new CopyTextReader(columns, batchRows);
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const decode = (chunk?: Uint8Array): string => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw new CopyTextError(reader.line, 'invalid UTF-8 (in this line or one after it)');
    }
  };
  for await (const chunk of stream) {
    reader.push(typeof chunk === 'string' ? chunk : decode(chunk));
    for (let batch = reader.ready.shift(); batch; batch = reader.ready.shift()) yield batch;
  }
  reader.push(decode());
  reader.finish();
  for (let batch = reader.ready.shift(); batch; batch = reader.ready.shift()) yield batch;
  const rest = reader.rest();
  if (rest.length > 0) yield rest;
}

const COPY_SPECIAL = /[\\\n\r\t]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const escapeField = (value: string): string =>
  COPY_SPECIAL.test(value) ? value.replace(/[\\\n\r\t]/g, (c) => COPY_ESCAPES[c] as string) : value;

/**
 * Rows in COPY text format, UTF-8: the bytes a `COPY ... FROM STDIN` of their columns reads. An
 * encoded row is written from its bytes.
 */
export function copyTextOf(rows: readonly (readonly ColumnValue[] | EncodedRow)[]): Buffer {
  // Written straight into buffers: joining strings would make a string per separator and value.
  const full: Buffer[] = [];
  let out = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
  let at = 0;
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as readonly ColumnValue[] | EncodedRow;
    if (!Array.isArray(row)) {
      const encoded = row as EncodedRow;
      const room = encoded.copyTextBound;
      if (out.length - at < room) {
        full.push(out.subarray(0, at));
        out = Buffer.allocUnsafe(Math.max(COPY_CHUNK_BYTES, room));
        at = 0;
      }
      at = encoded.writeCopyText(out, at);
      continue;
    }
    for (let i = 0; i < row.length; i++) {
      const value = row[i];
      // Room for the value (a UTF-16 unit is at most 3 bytes, an escaped one 2), a separator and the newline.
      const room = (value ? value.length * 3 : 2) + 2;
      if (out.length - at < room) {
        full.push(out.subarray(0, at));
        out = Buffer.allocUnsafe(Math.max(COPY_CHUNK_BYTES, room));
        at = 0;
      }
      if (i > 0) out[at++] = TAB;
      if (value === null || value === undefined) {
        out[at++] = BACKSLASH;
        out[at++] = LETTER_N;
      } else if (value.length > 0) {
        at += out.write(escapeField(value), at, 'utf8');
      }
    }
    if (at === out.length) {
      full.push(out);
      out = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
      at = 0;
    }
    out[at++] = NEWLINE;
  }
  if (full.length === 0) return out.subarray(0, at);
  full.push(out.subarray(0, at));
  return Buffer.concat(full);
}

const COPY_CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const LETTER_N = 0x4e;
