/** Orders two key values (the source's text for them) as the source orders them. */
export type KeyOrder = (a: string, b: string) => number;

const integer: KeyOrder = (a, b) => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

// PostgreSQL compares uuids byte by byte, which is the order of their lower-case hex text.
const uuid: KeyOrder = (a, b) => {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};

const ORDERS: Record<string, KeyOrder> = {
  smallint: integer,
  integer: integer,
  bigint: integer,
  oid: integer,
  uuid,
};

/**
 * The order of a key column's type (its `format_type` name), for the types whose order does not
 * depend on a collation or a server setting; undefined for the others (text, numeric, times...).
 */
export function keyOrderOf(typeName: string): KeyOrder | undefined {
  return ORDERS[typeName];
}
