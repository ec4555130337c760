import type { TableSchema } from '../../core/change.js';

/**
 * Built-in types whose binary COPY form a server of any supported version reads back as the
 * value it was (each by its own OID, fixed across versions). Arrays, composites and extension or
 * user types are left out: their binary form names element or column OIDs, which differ between
 * databases.
 */
const PORTABLE_BINARY_TYPES = new Set([
  16, // boolean
  17, // bytea
  20, // bigint
  21, // smallint
  23, // integer
  25, // text
  114, // json
  650, // cidr
  700, // real
  701, // double precision
  829, // macaddr
  869, // inet
  1042, // character(n)
  1043, // character varying(n)
  1082, // date
  1083, // time
  1114, // timestamp
  1184, // timestamp with time zone
  1186, // interval
  1266, // time with time zone
  1700, // numeric
  2950, // uuid
  3802, // jsonb
]);

/** Key types whose binary value this sink can print as the source's text, to name a refused row. */
const KEY_TEXT: ReadonlyMap<number, (value: Buffer) => string> = new Map([
  [20, (v: Buffer) => v.readBigInt64BE(0).toString()],
  [21, (v: Buffer) => String(v.readInt16BE(0))],
  [23, (v: Buffer) => String(v.readInt32BE(0))],
  [25, (v: Buffer) => v.toString('utf8')],
  [1042, (v: Buffer) => v.toString('utf8')],
  [1043, (v: Buffer) => v.toString('utf8')],
  [2950, (v: Buffer) => v.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')],
]);

/**
 * Whether a snapshot of `source` can go into the target, whose columns have the types of
 * `target` (same names, same order), in binary COPY: every column of exactly the source's type
 * (modifiers included) and of a portable type, and a key this sink can name a refused row by.
 */
export function binaryCopyFits(source: TableSchema, target: TableSchema): boolean {
  if (source.columns.length !== target.columns.length) return false;
  const fits = source.columns.every(
    (c, i) => PORTABLE_BINARY_TYPES.has(c.typeOid) && target.columns[i]?.typeName === c.typeName,
  );
  const keyNamed = source.keyColumns.every((name) =>
    KEY_TEXT.has(source.columns.find((c) => c.name === name)?.typeOid ?? 0),
  );
  return fits && keyNamed;
}

/** The source's text of a key value in binary form (its column's type one binaryCopyFits admits). */
export function binaryKeyText(typeOid: number, value: Buffer): string | undefined {
  return KEY_TEXT.get(typeOid)?.(value);
}
