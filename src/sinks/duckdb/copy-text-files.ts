import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ColumnValue } from '../../core/change.js';
import { parseCopyTextLine } from '../../core/copy-text.js';

const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;
const TAB = 0x09;
const N = 0x4e;

/**
 * A piece of a partition as files DuckDB's CSV reader takes as they are: `plain`, lines of the
 * source's COPY text copied byte for byte (no escape in them but whole-field `\N`, read with
 * quoting off), and `quoted`, the other lines decoded and written again with every value quoted.
 */
export interface TextSegment {
  plain: string;
  quoted: string;
  plainBytes: number;
  quotedLines: number;
  /** Bytes of its longest line, at least: 0 when every line is shorter than `LONG_LINE`. */
  longestLine: number;
}

/** Lines up to this long are not measured: DuckDB reads them with its default buffers. */
export const LONG_LINE = 2 ** 20;

/** How the lines of a table's COPY text become a segment's. */
export interface LineRules {
  /** A row's values as DuckDB must read them (`DuckdbColumn.stage`); throws for a value refused. */
  stage(fields: ColumnValue[]): ColumnValue[];
  /**
   * Text whose presence in a line makes it go through `stage` (e.g. ` BC` for a date); undefined
   * when every line must (a column whose text DuckDB does not read as it is).
   */
  stagedWhen: readonly string[] | undefined;
}

/**
 * Writes a partition's COPY text stream into segments of files in `dir`, each handed to `ready`
 * once `segmentBytes` are in it (and the last at the end), so that DuckDB loads one while the next
 * is written. Lines are copied as they are, unless they hold an escape, text of `stagedWhen`, or
 * are empty (DuckDB skips an empty line), or would start a file with a byte order mark (which
 * DuckDB drops): those are decoded, staged and quoted. Resolves once every segment was
 * handed over, with the `ready` promises' results.
 */
export async function writeTextSegments<T>(
  copyText: Readable,
  dir: string,
  rules: LineRules,
  segmentBytes: number,
  ready: (segment: TextSegment) => Promise<T>,
): Promise<T[]> {
  const handed: Promise<T>[] = [];
  let index = 0;
  let current: OpenSegment | undefined;
  let carry: Buffer | undefined;
  let failed = false;
  const seal = async () => {
    if (!current) return;
    const segment = await current.close();
    current = undefined;
    const loaded = ready(segment);
    // Awaited below; a failure is seen there, and stops the reading, not as an unhandled rejection.
    loaded.catch(() => {
      failed = true;
    });
    handed.push(loaded);
  };
  try {
    for await (const chunk of copyText as AsyncIterable<Buffer | string>) {
      if (failed) break;
      let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (carry) data = Buffer.concat([carry, data]);
      const end = linesEnd(data);
      if (end === 0) {
        carry = data;
        continue;
      }
      carry = end < data.length ? data.subarray(end) : undefined;
      current ??= await OpenSegment.create(dir, index++);
      await current.write(data.subarray(0, end), rules);
      if (current.bytes >= segmentBytes) await seal();
    }
    if (!failed && carry && carry.length > 0) throw new Error('the COPY text ends within a line');
    if (!failed) await seal();
  } catch (error) {
    await current?.close().catch(() => undefined);
    await Promise.allSettled(handed);
    throw error;
  }
  // Every load settled before the caller ends its transaction: none is left running on its connection.
  const settled = await Promise.allSettled(handed);
  const refused = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (refused) throw refused.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** The length of `data` up to its last newline that ends a line (not one escaped by a backslash). */
function linesEnd(data: Buffer): number {
  let nl = data.lastIndexOf(NEWLINE);
  while (nl >= 0 && oddBackslashesBefore(data, nl)) nl = nl === 0 ? -1 : data.lastIndexOf(NEWLINE, nl - 1);
  return nl + 1;
}

function oddBackslashesBefore(data: Buffer, at: number): boolean {
  let i = at;
  while (i > 0 && data[i - 1] === BACKSLASH) i--;
  return (at - i) % 2 === 1;
}

/** Whether the backslash at `at` is a whole `\N` field (NULL), which DuckDB reads as such. */
function isNullField(data: Buffer, at: number): boolean {
  const before = at === 0 ? NEWLINE : data[at - 1];
  const after = data[at + 2];
  return (
    data[at + 1] === N &&
    (before === TAB || before === NEWLINE) &&
    (after === TAB || after === NEWLINE || after === undefined)
  );
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

class OpenSegment {
  /** Bytes written to both files, about (quoted text counted in characters). */
  bytes = 0;
  private plainBytes = 0;
  private quotedLines: string[] = [];
  private quotedCount = 0;
  private longestLine = 0;

  private constructor(
    private readonly paths: { plain: string; quoted: string },
    private readonly plain: FileHandle,
    private readonly quoted: FileHandle,
  ) {}

  static async create(dir: string, index: number): Promise<OpenSegment> {
    const paths = { plain: join(dir, `${index}.plain.tsv`), quoted: join(dir, `${index}.quoted.tsv`) };
    // The directory is the partition's own, made by mkdtemp: the names are new.
    const plain = await open(paths.plain, 'wx', 0o600);
    const quoted = await open(paths.quoted, 'wx', 0o600).catch(async (error: unknown) => {
      await plain.close();
      throw error;
    });
    return new OpenSegment(paths, plain, quoted);
  }

  /** Writes whole lines: runs of plain lines as they are, each other line staged and quoted. */
  async write(data: Buffer, rules: LineRules): Promise<void> {
    if (data.length > LONG_LINE) this.longestLine = Math.max(this.longestLine, longestLine(data));
    const starts =
      rules.stagedWhen === undefined
        ? undefined
        : [...new Set(stagedLineStarts(data, rules.stagedWhen))].sort((a, b) => a - b);
    let from = 0;
    let lineStart = 0;
    for (let i = 0; starts === undefined ? lineStart < data.length : i < starts.length; i++) {
      const start = starts === undefined ? lineStart : (starts[i] as number);
      if (start < from) continue;
      if (start > from) await this.writePlain(data.subarray(from, start), rules);
      from = this.quoteLine(data, start, rules);
      lineStart = from;
    }
    if (from < data.length) await this.writePlain(data.subarray(from), rules);
    if (this.quotedLines.length > 0) {
      const text = this.quotedLines.join('');
      // Quoting may make a line longer than it was: measured again.
      if (text.length > LONG_LINE / 2)
        this.longestLine = Math.max(this.longestLine, longestLine(Buffer.from(text)));
      this.quotedLines = [];
      this.bytes += text.length;
      await this.quoted.write(text);
    }
  }

  /** Quotes the line at `start`; returns where the next begins. */
  private quoteLine(data: Buffer, start: number, rules: LineRules): number {
    let end = data.indexOf(NEWLINE, start);
    while (oddBackslashesBefore(data, end)) end = data.indexOf(NEWLINE, end + 1);
    const fields = rules.stage(parseCopyTextLine(data.toString('utf8', start, end)));
    this.quotedLines.push(
      `${fields.map((v) => (v === null ? '\\N' : `"${v.replaceAll('"', '""')}"`)).join('\t')}\n`,
    );
    this.quotedCount++;
    return end + 1;
  }

  private async writePlain(data: Buffer, rules: LineRules): Promise<void> {
    let from = 0;
    // DuckDB takes a byte order mark at the start of a file for none of the data's.
    while (this.plainBytes === 0 && from < data.length && data.subarray(from, from + 3).equals(BOM))
      from = this.quoteLine(data, from, rules);
    if (from === data.length) return;
    const rest = from === 0 ? data : data.subarray(from);
    this.bytes += rest.length;
    this.plainBytes += rest.length;
    await this.plain.write(rest);
  }

  async close(): Promise<TextSegment> {
    await Promise.all([this.plain.close(), this.quoted.close()]);
    return {
      ...this.paths,
      plainBytes: this.plainBytes,
      quotedLines: this.quotedCount,
      longestLine: this.longestLine,
    };
  }
}

function longestLine(data: Buffer): number {
  let longest = 0;
  for (let from = 0; from < data.length; ) {
    const nl = data.indexOf(NEWLINE, from);
    const end = nl < 0 ? data.length : nl;
    longest = Math.max(longest, end - from + 1);
    from = end + 1;
  }
  return longest;
}

/** Where the lines that must be staged start: an escape, text of `stagedWhen`, an empty line. */
function stagedLineStarts(data: Buffer, stagedWhen: readonly string[]): number[] {
  const starts: number[] = [];
  const lineOf = (at: number) => (at === 0 ? 0 : data.lastIndexOf(NEWLINE, at - 1) + 1);
  // Past a staged line at once: its other hits say nothing new (and a long line would be read again for each).
  const nextLine = (at: number) => {
    const nl = data.indexOf(NEWLINE, at);
    return nl < 0 ? data.length : nl + 1;
  };
  for (let at = data.indexOf(BACKSLASH); at >= 0; ) {
    if (isNullField(data, at)) {
      at = data.indexOf(BACKSLASH, at + 2);
      continue;
    }
    starts.push(lineOf(at));
    at = data.indexOf(BACKSLASH, nextLine(at));
  }
  for (const text of stagedWhen) {
    for (let at = data.indexOf(text); at >= 0; at = data.indexOf(text, nextLine(at))) starts.push(lineOf(at));
  }
  if (data[0] === NEWLINE) starts.push(0);
  for (let at = data.indexOf('\n\n'); at >= 0; at = data.indexOf('\n\n', at + 1)) starts.push(at + 1);
  return starts;
}
