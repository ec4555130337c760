import { Readable } from 'node:stream';
import type { ColumnSchema, ColumnValue, Row, TableRef } from '../../core/change.js';
import { RefusedChangeError } from '../refused-change.js';
import type { TargetTable } from './apply-plan.js';
import { type SourceKind, sourceKindOf } from './column-types.js';
import { qualifiedName, quoteIdent } from './ddl.js';
import { asIs, type MysqlValue, UnstorableValueError } from './values.js';

/**
 * The one name a LOAD DATA statement of the sink gives its data. The server answers the statement
 * by asking for the file it names; the sink hands over its own stream only for this name, so no
 * file of the service's host is ever read, whatever a server asks.
 */
export const LOAD_STREAM_NAME = 'replicator-rows';

/** What a server asking for any other file gets: an error, and no byte of any file. */
export const refusedFile = (name: string): Readable =>
  new Readable({
    read() {
      this.destroy(
        new Error(`the server asked for the file ${JSON.stringify(name)}, which the sink never sends`),
      );
    },
  });

/** Rows of one LOAD DATA statement at most: a refused row is named from the keys of one statement. */
export const LOAD_ROWS = 50_000;

/** Bytes of text handed to the connection at a time. */
const CHUNK_BYTES = 256 * 1024;

const SPECIAL = /[\\\t\n\r\0]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };

/** One field as LOAD DATA reads it (tab-separated, backslash escapes, `\N` for NULL); bytes in hex. */
export function loadDataField(value: MysqlValue): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return value.toString('hex');
  return SPECIAL.test(value) ? value.replace(/[\\\t\n\r\0]/g, (c) => ESCAPES[c] as string) : value;
}

/**
 * `LOAD DATA LOCAL INFILE` of `columns` into `target`, every format option spelled out. `REPLACE`,
 * so that a partition written again converges, and so that MariaDB keeps strict mode: without it
 * LOCAL turns refused values into warnings. Binary columns arrive in hex, through `UNHEX`.
 */
export function loadDataSql(
  target: TableRef,
  columns: readonly Pick<ColumnSchema, 'name'>[],
  binary: ReadonlySet<string>,
): string {
  const fields = columns.map((c, i) => (binary.has(c.name) ? `@v${i}` : quoteIdent(c.name)));
  const sets = columns.flatMap((c, i) =>
    binary.has(c.name) ? [`${quoteIdent(c.name)} = UNHEX(@v${i})`] : [],
  );
  return (
    `LOAD DATA LOCAL INFILE '${LOAD_STREAM_NAME}' REPLACE INTO TABLE ${qualifiedName(target)} ` +
    "CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\' " +
    `LINES STARTING BY '' TERMINATED BY '\\n' (${fields.join(', ')})` +
    (sets.length > 0 ? ` SET ${sets.join(', ')}` : '')
  );
}

/** The key of a row of a full image, in key order. */
export const rowKey = (table: TargetTable, row: Row): Row =>
  Object.fromEntries(table.source.keyColumns.map((k) => [k, row[k] ?? null]));

/**
 * Kinds whose text, as the source prints it and as converted, never holds a backslash, TAB,
 * newline, carriage return or NUL: it needs no escaping.
 */
const PLAIN_KINDS = new Set<SourceKind>([
  'boolean',
  'integer',
  'decimal',
  'float',
  'date',
  'time',
  'timestamp',
  'timestamptz',
]);

/** Writes a row as one line of LOAD DATA text, each value converted for its column as a batch's are. */
export type LineWriter = (row: Row) => string;

export function loadDataLines(table: TargetTable): LineWriter {
  const columns = table.source.columns.map((c) => ({
    name: c.name,
    convert: table.converters.get(c.name) ?? asIs,
    plain: PLAIN_KINDS.has(sourceKindOf(c.typeName)),
  }));
  const field = (row: Row, column: (typeof columns)[number]): string => {
    const text: ColumnValue = row[column.name] ?? null;
    if (column.convert === asIs) return column.plain && text !== null ? text : loadDataField(text);
    try {
      const value = column.convert(text);
      return column.plain && typeof value === 'string' ? value : loadDataField(value);
    } catch (error) {
      if (!(error instanceof UnstorableValueError)) throw error;
      throw new RefusedChangeError(table.source, rowKey(table, row), error.message, { cause: error });
    }
  };
  return (row) => {
    let line = field(row, columns[0] as (typeof columns)[number]);
    for (let i = 1; i < columns.length; i++)
      line += `\t${field(row, columns[i] as (typeof columns)[number])}`;
    return `${line}\n`;
  };
}

/**
 * The text of the rows `batches` gives, up to `limit` rows, as a stream; `loaded` gets each row in
 * order (the server names a refused row by its number). Rows are pulled only as the server reads.
 */
export function loadDataStream(
  line: LineWriter,
  batches: AsyncIterator<Row[]>,
  limit: number,
  loaded: Row[],
  carry: { rows: Row[] },
): Readable {
  async function* text() {
    let chunk = '';
    while (loaded.length < limit) {
      let rows = carry.rows;
      if (rows.length === 0) {
        const next = await batches.next();
        if (next.done) break;
        rows = next.value;
      }
      const take = rows.slice(0, limit - loaded.length);
      carry.rows = rows.slice(take.length);
      for (const row of take) {
        loaded.push(row);
        chunk += line(row);
      }
      if (chunk.length >= CHUNK_BYTES) {
        yield Buffer.from(chunk);
        chunk = '';
      }
    }
    if (chunk.length > 0) yield Buffer.from(chunk);
  }
  return Readable.from(text(), { objectMode: false });
}

/** The row a server's error names (`... at row 3`), counted from 1 in its statement. */
export function refusedRowNumber(error: unknown): number | undefined {
  const match = / at row (\d+)$/.exec((error as Error | undefined)?.message ?? '');
  return match ? Number(match[1]) : undefined;
}
