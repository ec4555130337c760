import type { ColumnValue } from '../../core/change.js';
import type { SourceKind } from './column-types.js';

/** A parameter as mysql2 escapes it: text, bytes (sent as X'..'), or NULL. */
export type MysqlValue = string | Buffer | null;

/** A source value the target column cannot hold (an infinite date, a NaN in a DECIMAL). */
export class UnstorableValueError extends Error {
  constructor(
    readonly column: string,
    reason: string,
  ) {
    super(`column ${JSON.stringify(column)}: ${reason}`);
    this.name = 'UnstorableValueError';
  }
}

/** Turns one column's canonical PostgreSQL text into what its MySQL column takes. */
export type ValueConverter = (text: ColumnValue) => MysqlValue;

const NUMERIC_TARGETS = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'bigint', 'bit', 'boolean']);
const DECIMAL_TARGETS = new Set([...NUMERIC_TARGETS, 'decimal', 'float', 'double']);
const BINARY_TARGETS = new Set(['binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob']);
const DATETIME_TARGETS = new Set(['datetime', 'timestamp']);
const DATE_TARGETS = new Set([...DATETIME_TARGETS, 'date']);

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?$/;
const TIMESTAMPTZ =
  /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?$/;
/** A time stamp at offset +00 of years 1 to 9999 (year 0 has no AD form). */
const IN_UTC = /^(?!0000)\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?\+00$/;
const NOT_FINITE = new Set(['NaN', 'Infinity', '-Infinity']);

const shown = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * A `timestamp with time zone` as UTC `YYYY-MM-DD HH:MM:SS[.ffffff]`, the fraction digit for
 * digit. Only years 1 to 9999 AD have a MySQL DATETIME; `infinity`, BC and later years are refused.
 */
export function utcDatetime(text: string, column = ''): string {
  // In UTC already (the source's sessions are): the text without its offset.
  if (text.endsWith('+00') && IN_UTC.test(text)) return text.slice(0, -3);
  const m = TIMESTAMPTZ.exec(text);
  if (!m)
    throw new UnstorableValueError(column, `${shown(text)} has no MySQL DATETIME (years 1 to 9999 AD only)`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const sign = m[8] === '-' ? -1 : 1;
  const offset = sign * (Number(m[9]) * 3600 + Number(m[10] ?? 0) * 60 + Number(m[11] ?? 0));
  const at = new Date(0);
  // setUTCFullYear, not Date.UTC: the latter reads years 0 to 99 as 1900 to 1999.
  at.setUTCFullYear(y, mo - 1, d);
  at.setUTCHours(h, mi, s - offset, 0);
  const year = at.getUTCFullYear();
  if (year < 1 || year > 9999) {
    throw new UnstorableValueError(column, `${shown(text)} is outside the years 1 to 9999 in UTC`);
  }
  const date = `${pad(year, 4)}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())}`;
  const time = `${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())}`;
  return `${date} ${time}${m[7] ?? ''}`;
}

/** `\x0a1b…` (bytea in hex, as the source sends it) as bytes. */
export function byteaBytes(text: string, column = ''): Buffer {
  if (!/^\\x(?:[0-9a-fA-F]{2})*$/.test(text)) {
    throw new UnstorableValueError(column, 'bytea must arrive in hex format (\\x…)');
  }
  return Buffer.from(text.slice(2), 'hex');
}

/**
 * A float for a MySQL FLOAT column, as the exact decimal of the float32 it rounds to. A `real`
 * prints the shortest text that reads back as itself in float4, which may lie just above FLT_MAX
 * (`3.4028235e+38`): MySQL reads the text as a double, finds it out of FLOAT's range and refuses
 * it, though the value is FLT_MAX. The float32's own decimal is in range and stores that very
 * float. `-0` and the other zeros keep their text.
 */
function floatText(text: string, column: string): string {
  if (NOT_FINITE.has(text)) {
    throw new UnstorableValueError(column, `${text} cannot be stored in a MySQL FLOAT column`);
  }
  const single = Math.fround(Number(text));
  if (!Number.isFinite(single)) {
    throw new UnstorableValueError(column, `${shown(text)} is beyond the range of a MySQL FLOAT`);
  }
  return single === 0 ? text : String(single);
}

/** Whether the converter of such a column gives bytes rather than text. */
export const convertsToBytes = (kind: SourceKind, targetType: string): boolean =>
  kind === 'bytes' && BINARY_TARGETS.has(targetType.toLowerCase());

/**
 * How a source column's text is written to a target column of MySQL type `targetType`
 * (`information_schema.COLUMNS.DATA_TYPE`). Only what MySQL would misread is converted: booleans
 * to 1/0 and bytea to bytes for numeric and binary columns, time stamps with offsets to UTC for
 * DATETIME and TIMESTAMP; values the column cannot hold (infinite or BC dates, NaN and infinities
 * in numeric columns) are refused rather than changed. Everything else is the text as it is, which
 * MySQL parses.
 */
export function valueConverter(column: string, kind: SourceKind, targetType: string): ValueConverter {
  const target = targetType.toLowerCase();
  const text =
    (convert: (value: string) => MysqlValue): ValueConverter =>
    (value) =>
      value === null ? null : convert(value);
  if (kind === 'boolean' && NUMERIC_TARGETS.has(target)) return text((v) => (v === 't' ? '1' : '0'));
  if (convertsToBytes(kind, target)) return text((v) => byteaBytes(v, column));
  if (kind === 'timestamptz' && DATETIME_TARGETS.has(target)) return text((v) => utcDatetime(v, column));
  if ((kind === 'timestamp' || kind === 'date') && DATE_TARGETS.has(target)) {
    const form = kind === 'date' ? DATE : TIMESTAMP;
    return text((v) => {
      if (form.test(v)) return v;
      throw new UnstorableValueError(
        column,
        `${shown(v)} has no MySQL ${target.toUpperCase()} (years 1 to 9999 AD only)`,
      );
    });
  }
  if (kind === 'float' && target === 'float') return text((v) => floatText(v, column));
  if ((kind === 'float' || kind === 'decimal') && DECIMAL_TARGETS.has(target)) {
    return text((v) => {
      if (!NOT_FINITE.has(v)) return v;
      throw new UnstorableValueError(
        column,
        `${v} cannot be stored in a MySQL ${target.toUpperCase()} column`,
      );
    });
  }
  return asIs;
}

/** The converter of a column whose text MySQL takes as it is. */
export const asIs: ValueConverter = (value) => value;
