import type { ColumnValue } from '../../core/change.js';

const NEEDS_ESCAPE = /["\\]/;

/**
 * A `text[]` literal of the values, as the server reads it (`{"a","b",NULL}`): the form a
 * set-based statement's column parameters take. Made here rather than by pg, whose conversion of
 * an array builds the literal a piece at a time and escapes every element with two regular
 * expressions; a column of plain values is one join.
 */
export function textArrayLiteral(values: readonly ColumnValue[]): string {
  let plain = true;
  for (const value of values) {
    if (value === null || value === undefined || NEEDS_ESCAPE.test(value)) {
      plain = false;
      break;
    }
  }
  if (plain) return values.length === 0 ? '{}' : `{"${values.join('","')}"}`;
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    parts[i] =
      value === null || value === undefined
        ? 'NULL'
        : `"${NEEDS_ESCAPE.test(value) ? value.replace(/["\\]/g, '\\$&') : value}"`;
  }
  return `{${parts.join(',')}}`;
}

/** The parameters of a set-based statement: one `text[]` literal per column. */
export const arrayParameters = (columns: readonly (readonly ColumnValue[])[]): string[] =>
  columns.map(textArrayLiteral);
