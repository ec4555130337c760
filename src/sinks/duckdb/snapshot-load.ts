import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ColumnValue, Row, TableRef, TableSchema } from '../../core/change.js';
import { ValueError } from '../../core/values.js';
import { RefusedChangeError } from '../refused-change.js';
import type { DuckdbColumn } from './column-types.js';
import { type LineRules, LONG_LINE, type TextSegment, writeTextSegments } from './copy-text-files.js';
import { qualifiedName, quoteIdent, quoteLiteral } from './ddl.js';

/** Bytes of COPY text in a file DuckDB loads while the next is written. */
const SEGMENT_BYTES = 8 * 2 ** 20;

/** What a snapshot partition is loaded into. */
export interface PartitionTarget {
  source: TableSchema;
  target: TableRef;
  /** The DuckDB column of each source column, in the source's order (the COPY text's). */
  columns: readonly DuckdbColumn[];
}

/**
 * Loads a partition's COPY text into its target in the caller's transaction on `conn`: the text
 * is written to files of a private directory (see copy-text-files), and each file is merged into
 * the target by key (`INSERT OR REPLACE`, so that a partition written again converges) by one
 * statement reading it with DuckDB's CSV reader, in parallel, while the next is written. A value
 * DuckDB cannot cast fails the statement; `inspect` (a connection outside the transaction, which
 * the failure aborted) then finds the row, refused naming its key. Returns the rows written.
 */
export async function loadPartitionText(
  conn: DuckDBConnection,
  inspect: () => Promise<DuckDBConnection>,
  table: PartitionTarget,
  copyText: Readable,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'replicator-duckdb-'));
  try {
    let previous: Promise<unknown> = Promise.resolve();
    const counts = await writeTextSegments(copyText, dir, lineRules(table), SEGMENT_BYTES, (segment) => {
      const loaded = previous.then(() => loadSegment(conn, inspect, table, segment));
      previous = loaded.catch(() => undefined);
      return loaded;
    });
    return counts.reduce((sum, n) => sum + n, 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function lineRules(table: PartitionTarget): LineRules {
  const marks = table.columns.map((c) => c.verbatim);
  return {
    stagedWhen: marks.includes(undefined)
      ? undefined
      : [...new Set(marks.filter((m): m is string => typeof m === 'string'))],
    stage: (fields) => {
      if (fields.length !== table.columns.length)
        throw new Error(`COPY text row of ${fields.length} fields for ${table.columns.length} columns`);
      return fields.map((value, i) => {
        const column = table.columns[i] as DuckdbColumn;
        if (value === null) return null;
        try {
          return column.stage(value);
        } catch (error) {
          if (!(error instanceof ValueError)) throw error;
          throw new RefusedChangeError(
            table.source,
            keyOf(table, fields),
            `${column.name}: ${error.message}`,
            {
              cause: error,
            },
          );
        }
      });
    },
  };
}

/**
 * `read_csv` of a segment's file, every column VARCHAR (`c0`, `c1`, …); its buffers made for the
 * longest line only when one is longer than DuckDB's default, since each reading thread holds one.
 */
function readFile(path: string, quoted: boolean, columns: number, longestLine: number): string {
  const types = Array.from({ length: columns }, (_, i) => `'c${i}': 'VARCHAR'`).join(', ');
  const quoting = quoted ? `quote='"', escape='"', allow_quoted_nulls=false` : `quote='', escape=''`;
  const sizes =
    longestLine > LONG_LINE ? `, max_line_size=${longestLine + 1}, buffer_size=${2 * (longestLine + 1)}` : '';
  return `read_csv(${quoteLiteral(path)}, delim='\t', header=false, nullstr='\\N', new_line='\\n', ${quoting}, auto_detect=false${sizes}, columns={${types}})`;
}

function segmentReads(segment: TextSegment, columns: number): string[] {
  return [
    ...(segment.plainBytes > 0 ? [readFile(segment.plain, false, columns, segment.longestLine)] : []),
    ...(segment.quotedLines > 0 ? [readFile(segment.quoted, true, columns, segment.longestLine)] : []),
  ];
}

async function loadSegment(
  conn: DuckDBConnection,
  inspect: () => Promise<DuckDBConnection>,
  table: PartitionTarget,
  segment: TextSegment,
): Promise<number> {
  const reads = segmentReads(segment, table.columns.length);
  if (reads.length === 0) return 0;
  const casts = table.columns.map((c, i) => c.cast(`c${i}`)).join(', ');
  const names = table.columns.map((c) => quoteIdent(c.name)).join(', ');
  try {
    const result = await conn.run(
      `INSERT OR REPLACE INTO ${qualifiedName(table.target)} (${names}) ${reads.map((r) => `SELECT ${casts} FROM ${r}`).join(' UNION ALL ')}`,
    );
    return result.rowsChanged;
  } catch (error) {
    throw (await refusedRow(await inspect(), table, reads)) ?? error;
  }
}

/** The first row of the files one of whose values DuckDB cannot cast, as a refusal; none: undefined. */
async function refusedRow(
  conn: DuckDBConnection,
  table: PartitionTarget,
  reads: readonly string[],
): Promise<RefusedChangeError | undefined> {
  try {
    const failing = table.columns.map((c, i) => `(c${i} IS NOT NULL AND ${c.cast(`c${i}`, true)} IS NULL)`);
    const keys = table.source.keyColumns.map(
      (k) => `c${table.source.columns.findIndex((c) => c.name === k)}`,
    );
    for (const read of reads) {
      const reader = await conn.runAndReadAll(
        `SELECT ${failing.map((f, i) => `${f} AS f${i}`).join(', ')}, ${keys.join(', ')} FROM ${read} WHERE ${failing.join(' OR ')} LIMIT 1`,
      );
      const row = reader.getRowsJS()[0];
      if (!row) continue;
      const column = table.columns[row.indexOf(true)] as DuckdbColumn;
      const key = Object.fromEntries(
        table.source.keyColumns.map((k, i) => [k, (row[table.columns.length + i] ?? null) as string | null]),
      );
      return new RefusedChangeError(
        table.source,
        key,
        `column ${JSON.stringify(column.name)}: the value cannot be stored as DuckDB ${column.type}`,
      );
    }
    return undefined;
  } finally {
    conn.closeSync();
  }
}

function keyOf(table: PartitionTarget, fields: readonly ColumnValue[]): Row {
  return Object.fromEntries(
    table.source.keyColumns.map((k) => [
      k,
      fields[table.source.columns.findIndex((c) => c.name === k)] ?? null,
    ]),
  );
}
