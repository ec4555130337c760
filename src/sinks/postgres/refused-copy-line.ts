import type { Readable } from 'node:stream';
import type { ColumnValue, TableSchema } from '../../core/change.js';
import { parseCopyTextLine } from '../../core/copy-text.js';
import { healsByRetrying, sqlstateOf } from '../../core/sqlstate.js';
import { RefusedChangeError } from '../refused-change.js';

/**
 * How much of a partition's COPY text stays at hand after it is sent: the server reports a line it
 * refuses by number, after more has gone out (socket buffers hold a few MiB at most), and the line
 * gives the refused row's key.
 */
export const RECENT_BYTES = 8 * 1024 * 1024;

/** What a sink keeps of the COPY it sent, to name the row behind a line number the server refuses. */
export interface RecentCopyRows {
  /** Keeps what `copy` sends from now on. */
  watch(copy: Readable): this;
  /** The key of row `n` (from 1), or undefined when that row is no longer kept whole. */
  keyOf(table: TableSchema, n: number): Record<string, string | null> | undefined;
}

/**
 * Keeps the last RECENT_BYTES (and some) of a COPY text, to find a line by number. It listens to
 * the text's chunks as they go by rather than standing in the pipe: a stage of its own cost a
 * tenth of the snapshot's throughput.
 */
export class RecentCopyText implements RecentCopyRows {
  private chunks: Buffer[] = [];
  private bytes = 0;
  // Whole lines in the chunks let go of; a kept chunk after one may start inside a line.
  private linesDropped = 0;
  private dropped = false;

  /** Keeps what `text` sends from now on. */
  watch(text: Readable): this {
    text.on('data', (chunk: Buffer | string) =>
      this.add(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
    );
    return this;
  }

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.chunks.length > 1 && this.bytes - (this.chunks[0] as Buffer).length >= RECENT_BYTES) {
      const first = this.chunks.shift() as Buffer;
      this.bytes -= first.length;
      this.linesDropped += newlines(first);
      this.dropped = true;
    }
  }

  /** Line `n` (from 1), or undefined when it is no longer kept whole. */
  line(n: number): string | undefined {
    // After a dropped chunk, the first kept piece may be the tail of a line: it is not trusted.
    const first = this.linesDropped + (this.dropped ? 2 : 1);
    if (n < first) return undefined;
    const lines = Buffer.concat(this.chunks).toString('utf8').split('\n');
    return lines[n - this.linesDropped - 1];
  }

  keyOf(table: TableSchema, n: number): Record<string, string | null> | undefined {
    const line = this.line(n);
    return line === undefined ? undefined : keyOfLine(table, parseCopyTextLine(line));
  }
}

function newlines(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) count++;
  return count;
}

// `COPY orders, line 3, column at: "294277-01-01 00:00:00"`, as the server places a COPY error.
const WHERE_LINE = /^COPY .*?, line (\d+)(?:, column |:|$)/;

/**
 * A COPY of snapshot rows the server refused for good (a value it cannot read, a constraint) as
 * a RefusedChangeError naming the table, the row's key and the column, as a refused change is;
 * undefined for an error that may heal by retrying or that names no line.
 */
export function refusedCopyLine(
  table: TableSchema,
  recent: RecentCopyRows,
  error: unknown,
): RefusedChangeError | undefined {
  const sqlstate = sqlstateOf(error);
  if (sqlstate === undefined || healsByRetrying(sqlstate)) return undefined;
  const { message, detail, where } = error as Error & { detail?: string; where?: string };
  const match = WHERE_LINE.exec(where ?? '');
  if (!match) return undefined;
  const lineNumber = Number(match[1]);
  const rest = (where as string).slice(match[0].length);
  // The column, when the server names one: the longest of the table's names `where` goes on with.
  const column = table.columns
    .map((c) => c.name)
    .filter((name) => match[0].endsWith(', column ') && (rest.startsWith(`${name}:`) || rest === name))
    .sort((a, b) => b.length - a.length)[0];
  // A binary COPY numbers its tuples as lines.
  const key = recent.keyOf(table, lineNumber);
  const sinkError = `${column === undefined ? '' : `column ${JSON.stringify(column)}: `}${message}${
    detail ? ` (${detail})` : ''
  }${key ? '' : ` (line ${lineNumber} of the snapshot partition)`}`;
  return new RefusedChangeError(table, key, sinkError, { cause: error });
}

function keyOfLine(
  table: TableSchema,
  fields: readonly ColumnValue[],
): Record<string, string | null> | undefined {
  if (fields.length !== table.columns.length) return undefined;
  const at = new Map(table.columns.map((c, i) => [c.name, i]));
  return Object.fromEntries(table.keyColumns.map((name) => [name, fields[at.get(name) as number] ?? null]));
}
