import type { ColumnSchema } from '../../core/change.js';
import { type ScalarType, typedValue, type Value, ValueError, valueTypeOf } from '../../core/values.js';

/** A source column as the sink writes it: its DuckDB type, and how its text is staged and cast. */
export interface DuckdbColumn {
  name: string;
  /** The DuckDB type of the target column, e.g. `DECIMAL(12,2)`, `BIGINT[]`. */
  type: string;
  /** The source's text turned into text DuckDB casts to `type` losslessly; throws ValueError when it cannot be. */
  stage(text: string): string;
  /** SQL turning a staged VARCHAR expression into `type`; with `tried`, NULL where it cannot (to find a refused row). */
  cast(expr: string, tried?: boolean): string;
  /**
   * When `stage` leaves the source's text as it is, so that a snapshot may hand it to DuckDB
   * untouched: always (`true`), or unless the text holds this string; absent: never.
   */
  verbatim?: true | string;
}

/** DuckDB's DECIMAL holds at most 38 digits. */
const DECIMAL_MAX_PRECISION = 38;
const NUMERIC = /^numeric\((\d+),(\d+)\)$/;

const SCALARS: Partial<Record<ScalarType, string>> = {
  boolean: 'BOOLEAN',
  int16: 'SMALLINT',
  int32: 'INTEGER',
  int64: 'BIGINT',
  float32: 'FLOAT',
  float64: 'DOUBLE',
  uuid: 'UUID',
  json: 'JSON',
  bytes: 'BLOB',
  date: 'DATE',
  time: 'TIME',
  timetz: 'TIMETZ',
  timestamp: 'TIMESTAMP',
  timestamptz: 'TIMESTAMPTZ',
  interval: 'INTERVAL',
};

/** Array elements written as a LIST: those JSON carries exactly. Other arrays keep the source's text. */
const LIST_ELEMENTS: Partial<Record<ScalarType, string>> = {
  boolean: 'BOOLEAN',
  int16: 'SMALLINT',
  int32: 'INTEGER',
  int64: 'BIGINT',
  text: 'VARCHAR',
  uuid: 'UUID',
};

const same = (text: string) => text;
const plainCast =
  (type: string) =>
  (expr: string, tried = false) =>
    `${tried ? 'TRY_CAST' : 'CAST'}(${expr} AS ${type})`;

/**
 * The DuckDB column of a source column (see the type table of docs/sinks/duckdb.md). `numeric` without a
 * precision or beyond 38 digits is VARCHAR holding the source's exact text: DOUBLE would lose
 * digits. Any type not listed (enums, domains, geometric types, ranges, multi-type arrays) is
 * VARCHAR of the source's text.
 */
export function duckdbColumnOf(column: Pick<ColumnSchema, 'name' | 'typeName' | 'typeOid'>): DuckdbColumn {
  const valueType = valueTypeOf(column);
  const name = column.name;
  if (typeof valueType !== 'string') {
    const element = LIST_ELEMENTS[valueType.element];
    if (element === undefined)
      return { name, type: 'VARCHAR', stage: same, cast: plainCast('VARCHAR'), verbatim: true };
    return {
      name,
      type: `${element}[]`,
      stage: (text) => JSON.stringify(flatList(typedValue(valueType, text), text), bigintAsText),
      cast: (expr, tried = false) => `${tried ? 'TRY_CAST' : 'CAST'}(CAST(${expr} AS JSON) AS ${element}[])`,
    };
  }
  if (valueType === 'decimal') {
    const m = NUMERIC.exec(column.typeName.replace(/\s+/g, ''));
    if (m && Number(m[1]) <= DECIMAL_MAX_PRECISION) {
      const type = `DECIMAL(${m[1]},${m[2]})`;
      return { name, type, stage: same, cast: plainCast(type), verbatim: true };
    }
    return { name, type: 'VARCHAR', stage: same, cast: plainCast('VARCHAR'), verbatim: true };
  }
  const type = SCALARS[valueType];
  if (type === undefined)
    return { name, type: 'VARCHAR', stage: same, cast: plainCast('VARCHAR'), verbatim: true };
  switch (valueType) {
    case 'bytes':
      return {
        name,
        type,
        stage: hexOfBytea,
        cast: (expr, tried = false) => (tried ? `TRY(from_hex(${expr}))` : `from_hex(${expr})`),
      };
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return { name, type, stage: bcDate, cast: plainCast(type), verbatim: ' BC' };
    case 'interval':
      return { name, type, stage: intervalText, cast: plainCast(type) };
    default:
      return { name, type, stage: same, cast: plainCast(type), verbatim: true };
  }
}

const bigintAsText = (_key: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);

/**
 * A one-dimensional array whose lower bound is 1; a nested one cannot be a LIST of its element
 * type, and a LIST has no lower bound to keep another one in (array_out prints bounds, `[0:1]=`,
 * only when one is not 1).
 */
function flatList(value: Value, text: string): Value {
  if (Array.isArray(value) && value.some((v) => Array.isArray(v))) {
    throw new ValueError('array', text, 'a multi-dimensional array cannot be written to a LIST column');
  }
  if (text.startsWith('[')) {
    throw new ValueError(
      'array',
      text,
      'an array whose lower bound is not 1 cannot be written to a LIST column, which has no bounds',
    );
  }
  return value;
}

/** bytea's hex text `\x0a1b` as the bare hex `from_hex` reads. */
function hexOfBytea(text: string): string {
  if (!/^\\x(?:[0-9a-fA-F]{2})*$/.test(text)) throw new ValueError('bytea', text, 'not in hex format');
  return text.slice(2);
}

/** PostgreSQL writes BC dates with a ` BC` suffix, which DuckDB would ignore; DuckDB reads ` (BC)` after the date. */
function bcDate(text: string): string {
  if (!text.endsWith(' BC')) return text;
  const body = text.slice(0, -3);
  const space = body.indexOf(' ');
  return space < 0 ? `${body} (BC)` : `${body.slice(0, space)} (BC)${body.slice(space)}`;
}

const INTERVAL_PART = /^([+-]?\d+) (years?|mons?|days?)$/;
const INTERVAL_TIME = /^([+-])?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;

/**
 * PostgreSQL's interval text (IntervalStyle postgres: `1 year 2 mons -3 days +04:05:06.5`) as
 * months, days and microseconds, which DuckDB reads exactly; DuckDB does not read every form
 * PostgreSQL prints (signs before the time).
 */
function intervalText(text: string): string {
  const tokens = text.trim().split(/\s+/);
  let months = 0n;
  let days = 0n;
  let micros = 0n;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const time = INTERVAL_TIME.exec(token);
    if (time) {
      const [, sign, h, m, s, fraction = ''] = time;
      const value =
        ((BigInt(h as string) * 60n + BigInt(m as string)) * 60n + BigInt(s as string)) * 1_000_000n +
        BigInt(fraction.padEnd(6, '0') || '0');
      micros += sign === '-' ? -value : value;
      continue;
    }
    const part = INTERVAL_PART.exec(`${token} ${tokens[i + 1] ?? ''}`);
    if (!part) throw new ValueError('interval', text, 'not in the postgres interval style');
    i++;
    const n = BigInt(part[1] as string);
    const unit = part[2] as string;
    if (unit.startsWith('year')) months += n * 12n;
    else if (unit.startsWith('mon')) months += n;
    else days += n;
  }
  return `${months} months ${days} days ${micros} microseconds`;
}
