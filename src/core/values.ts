/**
 * Typed values for sinks that store them natively. Values travel as PostgreSQL's canonical text
 * (session DateStyle=ISO, IntervalStyle=postgres, extra_float_digits=3, TimeZone=UTC, bytea in hex);
 * `valueTypeOf` maps a column to a logical type and `typedValue` turns its text into a JavaScript value:
 *
 * | type                 | JavaScript value                                                      |
 * | -------------------- | --------------------------------------------------------------------- |
 * | boolean              | boolean                                                               |
 * | int16, int32         | number                                                                |
 * | int64                | bigint (also `oid`, an unsigned 32-bit number int32 cannot hold)      |
 * | float32, float64     | number, NaN and ±Infinity included (a float4 prints the shortest      |
 * |                      | decimal that reads back as itself: Math.fround gives the float4 back) |
 * | decimal              | string, exact as the source prints it ('NaN', '±Infinity' included)   |
 * | text, uuid, interval | string as the source prints it                                        |
 * | json                 | JSON.parse of the text (json and jsonb alike: numbers beyond 2^53     |
 * |                      | lose precision as JSON.parse reads them, JSON null is null)           |
 * | bytes                | Buffer                                                                |
 * | date, time, timetz,  | string, ISO 8601 where it is well defined, else the source's text     |
 * | timestamp(tz)        | (see below)                                                           |
 * | array                | nested JavaScript arrays of typed elements, null for NULL elements    |
 * | other                | string as the source prints it                                        |
 *
 * Dates and times: a value whose year is 0001 to 9999 AD becomes ISO 8601: the space between date
 * and time becomes `T`, a zero UTC offset becomes `Z` and an hours-only offset `+05` becomes
 * `+05:00` (`2024-01-02 03:04:05.678901+00` → `2024-01-02T03:04:05.678901Z`); dates and times of
 * day are already ISO. Every other value is kept as the source's text, untouched: `infinity` and
 * `-infinity`, BC values (`0044-03-15 BC`, `0044-03-15 12:00:00+00 BC`: ISO 8601 numbers years
 * astronomically and has no BC suffix), years above 9999 (`12345-01-01`: ISO needs a sign and an
 * agreed number of digits there) and offsets with seconds (`-00:01:15`, historical local mean
 * time: ISO offsets have none). Fractional seconds are kept digit for digit.
 */
import type { ColumnSchema, Row } from './change.js';

/** A logical type that is not an array. */
export type ScalarType =
  | 'boolean'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'float32'
  | 'float64'
  | 'decimal'
  | 'text'
  | 'uuid'
  | 'json'
  | 'bytes'
  | 'date'
  | 'time'
  | 'timetz'
  | 'timestamp'
  | 'timestamptz'
  | 'interval'
  | 'other';

/** An array (of any number of dimensions: PostgreSQL types do not tell them apart) of `element`. */
export interface ArrayType {
  readonly kind: 'array';
  readonly element: ScalarType;
}

/** The logical type of a column: how `typedValue` reads its text. */
export type ValueType = ScalarType | ArrayType;

/** What JSON.parse gives. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A typed column value; null is SQL NULL. */
export type Value = null | boolean | number | bigint | string | Buffer | JsonValue | Value[];

const SCALAR_TYPES: readonly ScalarType[] = [
  'boolean',
  'int16',
  'int32',
  'int64',
  'float32',
  'float64',
  'decimal',
  'text',
  'uuid',
  'json',
  'bytes',
  'date',
  'time',
  'timetz',
  'timestamp',
  'timestamptz',
  'interval',
  'other',
];

// One frozen instance per element type, so array types compare with ===.
const ARRAY_TYPES = new Map<ScalarType, ArrayType>(
  SCALAR_TYPES.map((element) => [element, Object.freeze({ kind: 'array', element })]),
);

/** The array type of `element`. */
export function arrayOf(element: ScalarType): ArrayType {
  return ARRAY_TYPES.get(element) as ArrayType;
}

export function isArrayType(type: ValueType): type is ArrayType {
  return typeof type !== 'string';
}

/** `int32`, `text[]`: how errors and logs name a type. */
export function valueTypeName(type: ValueType): string {
  return typeof type === 'string' ? type : `${type.element}[]`;
}

const SCALAR_OIDS = new Map<number, ScalarType>([
  [16, 'boolean'],
  [21, 'int16'],
  [23, 'int32'],
  [20, 'int64'],
  [26, 'int64'], // oid
  [700, 'float32'],
  [701, 'float64'],
  [1700, 'decimal'],
  [25, 'text'],
  [1043, 'text'], // varchar
  [1042, 'text'], // bpchar
  [19, 'text'], // name
  [18, 'text'], // "char"
  [2950, 'uuid'],
  [114, 'json'],
  [3802, 'json'], // jsonb
  [17, 'bytes'],
  [1082, 'date'],
  [1083, 'time'],
  [1266, 'timetz'],
  [1114, 'timestamp'],
  [1184, 'timestamptz'],
  [1186, 'interval'],
]);

const ARRAY_OIDS = new Map<number, ArrayType>(
  (
    [
      [1000, 'boolean'],
      [1005, 'int16'],
      [1007, 'int32'],
      [1016, 'int64'],
      [1028, 'int64'], // oid[]
      [1021, 'float32'],
      [1022, 'float64'],
      [1231, 'decimal'],
      [1009, 'text'],
      [1015, 'text'], // varchar[]
      [1014, 'text'], // bpchar[]
      [1003, 'text'], // name[]
      [1002, 'text'], // "char"[]
      [2951, 'uuid'],
      [199, 'json'],
      [3807, 'json'], // jsonb[]
      [1001, 'bytes'],
      [1182, 'date'],
      [1183, 'time'],
      [1270, 'timetz'],
      [1115, 'timestamp'],
      [1185, 'timestamptz'],
      [1187, 'interval'],
    ] as const
  ).map(([oid, element]) => [oid, arrayOf(element)]),
);

// format_type() names of the built-in types, typmods taken out.
const SCALAR_NAMES = new Map<string, ScalarType>([
  ['boolean', 'boolean'],
  ['smallint', 'int16'],
  ['integer', 'int32'],
  ['bigint', 'int64'],
  ['oid', 'int64'],
  ['real', 'float32'],
  ['double precision', 'float64'],
  ['numeric', 'decimal'],
  ['text', 'text'],
  ['character varying', 'text'],
  ['character', 'text'],
  ['bpchar', 'text'],
  ['name', 'text'],
  ['"char"', 'text'],
  ['citext', 'text'],
  ['uuid', 'uuid'],
  ['json', 'json'],
  ['jsonb', 'json'],
  ['bytea', 'bytes'],
  ['date', 'date'],
  ['time without time zone', 'time'],
  ['time with time zone', 'timetz'],
  ['timestamp without time zone', 'timestamp'],
  ['timestamp with time zone', 'timestamptz'],
  ['interval', 'interval'],
]);

// box is the one built-in type whose array literal is not comma-separated (`;`): its arrays stay text.
const BOX_ARRAY_OID = 1020;

function scalarOfName(typeName: string): ScalarType {
  let name = typeName.trim();
  if (name.startsWith('pg_catalog.')) name = name.slice('pg_catalog.'.length);
  // `numeric(12,2)`, `character varying(20)`, `timestamp(3) with time zone`
  name = name
    .replace(/\(\s*\d+\s*(?:,\s*-?\d+\s*)?\)/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  // `interval year to month`, `interval day to second`
  if (name === 'interval' || name.startsWith('interval ')) return 'interval';
  return SCALAR_NAMES.get(name) ?? 'other';
}

/**
 * The logical type of a column: by its type OID for the built-in types, else by its `typeName`
 * (format_type output): a name ending in `[]` is an array of the type named before it, a domain,
 * enum or other user type is 'other' (its text is kept).
 */
export function valueTypeOf(column: Pick<ColumnSchema, 'typeOid' | 'typeName'>): ValueType {
  const scalar = SCALAR_OIDS.get(column.typeOid);
  if (scalar) return scalar;
  const array = ARRAY_OIDS.get(column.typeOid);
  if (array) return array;
  if (column.typeOid === BOX_ARRAY_OID) return 'other';
  const name = column.typeName.trim();
  if (name.endsWith('[]')) {
    const elementName = name.replace(/(?:\s*\[\d*\])+$/, '');
    if (elementName === 'box' || elementName === 'pg_catalog.box') return 'other';
    return arrayOf(scalarOfName(elementName));
  }
  return scalarOfName(name);
}

/** A text value that is not what its type prints. */
export class ValueError extends Error {
  constructor(
    readonly type: string,
    readonly text: string,
    reason?: string,
  ) {
    super(`invalid ${type} value ${quoteForError(text)}${reason ? `: ${reason}` : ''}`);
    this.name = 'ValueError';
  }
}

function quoteForError(text: string): string {
  return JSON.stringify(text.length > 50 ? `${text.slice(0, 50)}…` : text);
}

/** The typed value of a column's canonical text; null stays null. Throws a ValueError on malformed text. */
export function typedValue(type: ValueType, text: string | null): Value {
  if (text === null) return null;
  if (typeof type === 'string') return scalarOf(type, text);
  try {
    return parseArray(type.element, text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ValueError(valueTypeName(type), text, reason);
  }
}

const INTEGER = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^\\x(?:[0-9a-fA-F]{2})*$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function scalarOf(type: ScalarType, text: string): Value {
  switch (type) {
    case 'text':
    case 'other':
      return text;
    case 'boolean':
      if (text === 't' || text === 'true') return true;
      if (text === 'f' || text === 'false') return false;
      throw new ValueError(type, text);
    case 'int16':
      return integer(type, text, -32768, 32767);
    case 'int32':
      return integer(type, text, -2147483648, 2147483647);
    case 'int64': {
      if (!INTEGER.test(text)) throw new ValueError(type, text);
      const value = BigInt(text);
      if (value < INT64_MIN || value > INT64_MAX) throw new ValueError(type, text, 'out of range');
      return value;
    }
    case 'float32':
    case 'float64':
      if (FLOAT.test(text) || text === 'NaN' || text === 'Infinity' || text === '-Infinity')
        return Number(text);
      throw new ValueError(type, text);
    case 'decimal':
      if (FLOAT.test(text) || text === 'NaN' || text === 'Infinity' || text === '-Infinity') return text;
      throw new ValueError(type, text);
    case 'uuid':
      if (UUID.test(text)) return text;
      throw new ValueError(type, text);
    case 'json':
      try {
        return JSON.parse(text) as JsonValue;
      } catch (error) {
        throw new ValueError(type, text, (error as Error).message);
      }
    case 'bytes':
      return bytes(text);
    case 'date':
      return date(text);
    case 'time':
      if (TIME.test(text)) return text;
      throw new ValueError(type, text);
    case 'timetz':
      return timetz(text);
    case 'timestamp':
    case 'timestamptz':
      return timestamp(type, text);
    case 'interval':
      if (text !== '' && (INTERVAL.test(text) || text === 'infinity' || text === '-infinity')) return text;
      throw new ValueError(type, text);
  }
}

function integer(type: ScalarType, text: string, min: number, max: number): number {
  if (!INTEGER.test(text)) throw new ValueError(type, text);
  const value = Number(text);
  if (value < min || value > max) throw new ValueError(type, text, 'out of range');
  return value;
}

// bytea_output=hex is what the source sessions run with; the escape format is read too, in case a
// database overrides it (its text never starts with a single backslash and x).
function bytes(text: string): Buffer {
  if (text.startsWith('\\x')) {
    if (!HEX.test(text)) throw new ValueError('bytes', text, 'bad hex');
    return Buffer.from(text.slice(2), 'hex');
  }
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 92) {
      if (c > 0x7f) throw new ValueError('bytes', text, 'neither hex nor escape format');
      out.push(c);
    } else if (text.charCodeAt(i + 1) === 92) {
      out.push(92);
      i++;
    } else if (/^[0-3][0-7]{2}$/.test(text.slice(i + 1, i + 4))) {
      out.push(Number.parseInt(text.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      throw new ValueError('bytes', text, 'neither hex nor escape format');
    }
  }
  return Buffer.from(out);
}

const TIME = /^\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
// What ISO 8601 cannot say as such and is kept as the source's text: BC, years past 9999.
const OTHER_DATE = /^\d{4,}-\d{2}-\d{2}(?: BC)?$/;
const TIMETZ = /^(\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)([+-]\d{2}(?::\d{2}){0,2})$/;
const ISO_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)$/;
const ISO_TIMESTAMPTZ = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)([+-]\d{2}(?::\d{2}){0,2})$/;
const OTHER_TIMESTAMP = /^\d{4,}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?: BC)?$/;
const OTHER_TIMESTAMPTZ =
  /^\d{4,}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?[+-]\d{2}(?::\d{2}){0,2}(?: BC)?$/;
// IntervalStyle=postgres: `1 year 2 mons -3 days +04:05:06.789`, `00:00:00`, `-178956970 years`.
const INTERVAL = /^(?:[+-]?\d+ (?:years?|mons?|days?)(?: (?=.)|$))*(?:[+-]?\d+:\d{2}:\d{2}(?:\.\d{1,6})?)?$/;

function isInfinity(text: string): boolean {
  return text === 'infinity' || text === '-infinity';
}

/** `+00` → `Z`, `+05` → `+05:00`, `+05:30` stays; undefined for an offset with seconds. */
function isoOffset(offset: string): string | undefined {
  const [hours, minutes = '00', seconds = '00'] = offset.split(':');
  if (seconds !== '00') return undefined;
  if (minutes === '00' && (hours === '+00' || hours === '-00')) return 'Z';
  return `${hours}:${minutes}`;
}

function date(text: string): string {
  if (ISO_DATE.test(text) || OTHER_DATE.test(text) || isInfinity(text)) return text;
  throw new ValueError('date', text);
}

function timetz(text: string): string {
  const match = TIMETZ.exec(text);
  if (!match) throw new ValueError('timetz', text);
  const offset = isoOffset(match[2] as string);
  return offset === undefined ? text : `${match[1]}${offset}`;
}

function timestamp(type: 'timestamp' | 'timestamptz', text: string): string {
  if (type === 'timestamp') {
    const match = ISO_TIMESTAMP.exec(text);
    if (match) return `${match[1]}T${match[2]}`;
    if (OTHER_TIMESTAMP.test(text) || isInfinity(text)) return text;
    throw new ValueError(type, text);
  }
  const match = ISO_TIMESTAMPTZ.exec(text);
  if (match) {
    const offset = isoOffset(match[3] as string);
    return offset === undefined ? text : `${match[1]}T${match[2]}${offset}`;
  }
  if (OTHER_TIMESTAMPTZ.test(text) || isInfinity(text)) return text;
  throw new ValueError(type, text);
}

// array_in's whitespace.
function isArraySpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/**
 * Reads an array literal as array_out prints it: `{1,2,NULL}`, `{"a b","c\"d",NULL,"NULL"}`,
 * `{{1,2},{3,4}}`, `{}`, and `[0:1]={1,2}` (the lower bounds, which JavaScript arrays cannot keep,
 * are checked against the shape, then dropped). An unquoted NULL is null, a quoted one the string.
 */
function parseArray(element: ScalarType, text: string): Value[] {
  let pos = 0;
  let declared: number[] | undefined;
  if (text.startsWith('[')) {
    const eq = text.indexOf('=');
    const decoration = eq < 0 ? '' : text.slice(0, eq);
    if (!/^(?:\[[+-]?\d+:[+-]?\d+\])+$/.test(decoration)) throw new Error('malformed dimensions');
    declared = [];
    for (const [, lower, upper] of decoration.matchAll(/\[([+-]?\d+):([+-]?\d+)\]/g)) {
      const length = Number(upper) - Number(lower) + 1;
      if (!(length >= 1)) throw new Error('upper bound below lower bound');
      declared.push(length);
    }
    pos = eq + 1;
  }
  // Length of every level seen so far, and the level holding the elements: all alike in an array.
  const lengths: number[] = [];
  let leafLevel = -1;
  let deepest = -1;

  const skipSpace = () => {
    while (pos < text.length && isArraySpace(text.charCodeAt(pos))) pos++;
  };

  const quoted = (): string => {
    pos++; // the opening quote
    let start = pos;
    let parts: string[] | undefined;
    for (;;) {
      if (pos >= text.length) throw new Error('unterminated quoted element');
      const c = text.charCodeAt(pos);
      if (c === 34) {
        const last = text.slice(start, pos++);
        return parts ? parts.join('') + last : last;
      }
      if (c === 92) {
        if (parts === undefined) parts = [];
        parts.push(text.slice(start, pos));
        if (++pos >= text.length) throw new Error('unterminated quoted element');
        start = pos; // the escaped character is taken as it is
      }
      pos++;
    }
  };

  // Up to the next `,` or `}`: null for NULL, else the element's text with surrounding space trimmed.
  const unquoted = (): string | null => {
    let start = pos;
    let end = pos; // after the last character that is not trimmed
    let parts: string[] | undefined;
    for (;;) {
      if (pos >= text.length) throw new Error('unterminated array');
      const c = text.charCodeAt(pos);
      if (c === 44 || c === 125) break;
      if (c === 123 || c === 34) throw new Error(`unexpected ${text[pos]} in an unquoted element`);
      if (c === 92) {
        if (parts === undefined) parts = [];
        parts.push(text.slice(start, pos));
        if (++pos >= text.length) throw new Error('unterminated array');
        start = pos;
        end = pos + 1;
      } else if (!isArraySpace(c)) {
        end = pos + 1;
      }
      pos++;
    }
    const last = text.slice(start, Math.max(start, end));
    if (!parts) {
      if (last === '') throw new Error('empty unquoted element');
      return last.length === 4 && last.toUpperCase() === 'NULL' ? null : last;
    }
    return parts.join('') + last;
  };

  const level = (depth: number): Value[] => {
    if (text.charCodeAt(pos) !== 123) throw new Error(`expected { at offset ${pos}`);
    pos++;
    if (depth > deepest) deepest = depth;
    const items: Value[] = [];
    skipSpace();
    if (text.charCodeAt(pos) === 125) {
      pos++;
    } else {
      for (;;) {
        skipSpace();
        const c = text.charCodeAt(pos);
        if (c === 123) {
          if (leafLevel !== -1 && leafLevel <= depth) throw new Error('elements and sub-arrays mixed');
          items.push(level(depth + 1));
        } else {
          if ((leafLevel !== -1 && leafLevel !== depth) || deepest > depth)
            throw new Error('elements and sub-arrays mixed');
          leafLevel = depth;
          const item = c === 34 ? quoted() : unquoted();
          items.push(item === null ? null : scalarOf(element, item));
        }
        skipSpace();
        const next = text.charCodeAt(pos++);
        if (next === 125) break;
        if (next !== 44)
          throw new Error(pos > text.length ? 'unterminated array' : `expected , or } at offset ${pos - 1}`);
      }
    }
    const length = lengths[depth];
    if (length === undefined) lengths[depth] = items.length;
    else if (length !== items.length) throw new Error('sub-arrays of different lengths');
    return items;
  };

  skipSpace();
  const result = level(0);
  skipSpace();
  if (pos !== text.length) throw new Error(`unexpected text after the array at offset ${pos}`);
  if (declared && (declared.length !== lengths.length || declared.some((n, i) => n !== lengths[i])))
    throw new Error('dimensions do not match the elements');
  return result;
}

// Column types by column object: a table's columns are read for every row.
const columnTypes = new WeakMap<ColumnSchema, ValueType>();

function cachedTypeOf(column: ColumnSchema): ValueType {
  let type = columnTypes.get(column);
  if (type === undefined) {
    type = valueTypeOf(column);
    columnTypes.set(column, type);
  }
  return type;
}

/**
 * The typed values of a row, by column name. A column absent from the row (an unchanged TOAST
 * value, a key image) stays absent; a row key that is not one of `columns` is left out.
 */
export function rowValues(columns: readonly ColumnSchema[], row: Row): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const column of columns) {
    if (!Object.hasOwn(row, column.name)) continue;
    const value = typedValue(cachedTypeOf(column), row[column.name] as string | null);
    // A column may be called __proto__: assigning it would set the prototype instead.
    if (column.name === '__proto__')
      Object.defineProperty(out, column.name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[column.name] = value;
  }
  return out;
}
