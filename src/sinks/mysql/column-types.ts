import type { ColumnSchema } from '../../core/change.js';

/**
 * How the text of a source column is read, from its PostgreSQL type name (`format_type`):
 * the conversions of `values.ts` depend on it.
 */
export type SourceKind =
  | 'boolean'
  | 'integer'
  | 'decimal'
  | 'float'
  | 'json'
  | 'bytes'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'text';

const INTEGERS: Record<string, string> = {
  smallint: 'SMALLINT',
  integer: 'INT',
  bigint: 'BIGINT',
  oid: 'INT UNSIGNED',
};

const NUMERIC = /^numeric(?:\((\d+),(\d+)\))?$/;
const VARCHAR = /^(?:character varying|character)\((\d+)\)$/;
const TIME = /^time(?:\((\d)\))? without time zone$/;
const TIMESTAMP = /^timestamp(?:\((\d)\))? without time zone$/;
const TIMESTAMPTZ = /^timestamp(?:\((\d)\))? with time zone$/;

/** MySQL's DECIMAL holds at most 65 digits, 30 of them after the point. */
const DECIMAL_MAX_PRECISION = 65;
const DECIMAL_MAX_SCALE = 30;

/**
 * Key columns are indexed, and MySQL indexes only bounded strings: a text key is a VARCHAR of at
 * most this many characters (4 bytes each in utf8mb4, so that a key of three such columns stays
 * within InnoDB's 3072 bytes). A longer key value is refused by the sink.
 */
export const KEY_TEXT_LENGTH = 255;

/** Non-key `varchar(n)` up to this length stay VARCHAR(n); longer ones are LONGTEXT (MySQL's row size limit). */
const VARCHAR_MAX_LENGTH = 255;

export function sourceKindOf(typeName: string): SourceKind {
  if (typeName === 'boolean') return 'boolean';
  if (INTEGERS[typeName]) return 'integer';
  if (NUMERIC.test(typeName)) return 'decimal';
  if (typeName === 'real' || typeName === 'double precision') return 'float';
  if (typeName === 'json' || typeName === 'jsonb') return 'json';
  if (typeName === 'bytea') return 'bytes';
  if (typeName === 'date') return 'date';
  if (TIME.test(typeName)) return 'time';
  if (TIMESTAMP.test(typeName)) return 'timestamp';
  if (TIMESTAMPTZ.test(typeName)) return 'timestamptz';
  return 'text';
}

/** The MySQL type of a non-key column of source type `typeName` (see the mapping table of docs/sinks/mysql.md). */
function valueTypeOf(typeName: string): string {
  const integer = INTEGERS[typeName];
  if (integer) return integer;
  const numeric = NUMERIC.exec(typeName);
  if (numeric) {
    const [precision, scale] = [Number(numeric[1]), Number(numeric[2])];
    // Unconstrained numeric, or wider than DECIMAL: the exact text, which no DECIMAL could hold.
    if (numeric[1] === undefined || precision > DECIMAL_MAX_PRECISION || scale > DECIMAL_MAX_SCALE)
      return 'LONGTEXT';
    return `DECIMAL(${precision},${scale})`;
  }
  const varchar = VARCHAR.exec(typeName);
  if (varchar) {
    const length = Number(varchar[1]);
    return length <= VARCHAR_MAX_LENGTH ? `VARCHAR(${length})` : 'LONGTEXT';
  }
  const time = TIME.exec(typeName);
  if (time) return `TIME(${time[1] ?? 6})`;
  const timestamp = TIMESTAMP.exec(typeName) ?? TIMESTAMPTZ.exec(typeName);
  if (timestamp) return `DATETIME(${timestamp[1] ?? 6})`;
  switch (typeName) {
    case 'real':
      return 'FLOAT';
    case 'double precision':
      return 'DOUBLE';
    case 'boolean':
      return 'TINYINT(1)';
    case 'json':
    case 'jsonb':
      return 'JSON';
    case 'bytea':
      return 'LONGBLOB';
    case 'uuid':
      return 'CHAR(36)';
    case 'date':
      return 'DATE';
    default:
      // text, arrays, interval, timetz, enums and any other type: the source's canonical text.
      return 'LONGTEXT';
  }
}

/** The MySQL column type of a source column: a key column gets a bounded, indexable type. */
export function mysqlTypeOf(column: Pick<ColumnSchema, 'typeName' | 'isKey'>): string {
  const type = valueTypeOf(column.typeName);
  if (!column.isKey) return type;
  if (type === 'LONGBLOB') return `VARBINARY(${KEY_TEXT_LENGTH})`;
  if (type === 'LONGTEXT' || type === 'JSON') return `VARCHAR(${KEY_TEXT_LENGTH})`;
  const varchar = /^VARCHAR\((\d+)\)$/.exec(type);
  if (varchar && Number(varchar[1]) > KEY_TEXT_LENGTH) return `VARCHAR(${KEY_TEXT_LENGTH})`;
  return type;
}

/** Whether MySQL can name a table or column so: 1 to 64 characters, no trailing space, no NUL, nothing beyond the BMP. */
export const mysqlCanName = (name: string): boolean => {
  // Counted in code points, as MySQL counts characters.
  const length = [...name].length;
  return length > 0 && length <= 64 && !name.endsWith(' ') && !/[\0\u{10000}-\u{10FFFF}]/u.test(name);
};

/** InnoDB's largest index key, in bytes (DYNAMIC and COMPRESSED row formats). */
const MAX_KEY_BYTES = 3072;

/** Bytes a key column of this MySQL type takes in an index at most (utf8mb4: 4 bytes a character). */
function keyBytes(type: string): number {
  const text = /^(?:VARCHAR|CHAR)\((\d+)\)$/.exec(type);
  if (text) return Number(text[1]) * 4;
  const binary = /^VARBINARY\((\d+)\)$/.exec(type);
  if (binary) return Number(binary[1]);
  return 16;
}

/**
 * Why MySQL could not create a table with these columns and key, or undefined: names MySQL
 * cannot hold or tells apart (it compares column names case-insensitively), or a key longer than
 * an index can be.
 */
export function uncreatableReason(
  tableName: string,
  columns: readonly Pick<ColumnSchema, 'name' | 'typeName'>[],
  keyColumns: readonly string[],
): string | undefined {
  if (!mysqlCanName(tableName)) {
    return `the table name ${JSON.stringify(tableName)} cannot be a MySQL name (at most 64 characters, no trailing space, no NUL or emoji); map it with table.<schema>.<table>`;
  }
  const seen = new Map<string, string>();
  for (const { name } of columns) {
    if (!mysqlCanName(name)) {
      return `column ${JSON.stringify(name)} cannot be a MySQL column name (at most 64 characters, no trailing space, no NUL or emoji)`;
    }
    const other = seen.get(name.toLowerCase());
    if (other !== undefined)
      return `columns ${JSON.stringify(other)} and ${JSON.stringify(name)} are one name to MySQL, which ignores case`;
    seen.set(name.toLowerCase(), name);
  }
  const bytes = keyColumns.reduce((sum, key) => {
    const column = columns.find((c) => c.name === key);
    return sum + (column ? keyBytes(mysqlTypeOf({ typeName: column.typeName, isKey: true })) : 0);
  }, 0);
  if (bytes > MAX_KEY_BYTES) {
    return `its key ${JSON.stringify(keyColumns)} would take ${bytes} bytes in a MySQL index, more than ${MAX_KEY_BYTES}`;
  }
  return undefined;
}
