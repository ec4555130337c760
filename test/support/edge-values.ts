/**
 * Edge values from PostgreSQL's regression tests and Debezium's type fixtures, one column per
 * type, and what each sink documents it becomes (docs/sinks/, the per-sink type tables and the change
 * envelope). A row holds the n-th value of every column (NULL where a column has fewer).
 */

export interface EdgeColumn {
  name: string;
  type: string;
  values: string[];
}

export const EDGE_COLUMNS: EdgeColumn[] = [
  { name: 'i2', type: 'smallint', values: ['-32768', '32767'] },
  { name: 'i8', type: 'bigint', values: ['-9223372036854775808', '9223372036854775807'] },
  // FLT_MAX and its negative, the smallest subnormal and normal, a negative zero, an inexact one.
  {
    name: 'f4',
    type: 'real',
    values: ['3.4028235e+38', '-3.4028235e+38', '1e-45', '1.1754944e-38', '-0', '0.1'],
  },
  {
    name: 'f8',
    type: 'double precision',
    values: ['1.7976931348623157e+308', '5e-324', '-0', '0.1', '-2.2250738585072014e-308'],
  },
  {
    name: 'n',
    type: 'numeric',
    values: [
      '123456789012345678901234567890.123456789012345678901',
      'NaN',
      '-0.000000000000000000001',
      'Infinity',
    ],
  },
  {
    name: 'nd',
    type: 'numeric(38,10)',
    values: ['9999999999999999999999999999.9999999999', '-0.0000000001'],
  },
  { name: 't', type: 'text', values: ['é 𝄞 中文 "q" \\ back\ttab\nnl\r', '', ' lead and trail '] },
  {
    name: 'ts',
    type: 'timestamp',
    values: ['0001-01-01 00:00:00', '9999-12-31 23:59:59.999999', '2024-02-29 12:00:00.5'],
  },
  {
    name: 'tz',
    type: 'timestamptz',
    values: ['0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999+00', '2024-02-29 12:00:00.5+05:30'],
  },
  { name: 'd', type: 'date', values: ['0001-01-01', '9999-12-31'] },
  { name: 'tm', type: 'time', values: ['24:00:00', '00:00:00', '23:59:59.999999'] },
  {
    name: 'iv',
    type: 'interval',
    values: ['178000000 years', '-1 days +00:00:00.000001', '1 mon 2 days 03:04:05.678901'],
  },
  { name: 'b', type: 'bytea', values: ['\\x00ff5c0a', '\\x'] },
  { name: 'ta', type: 'text[]', values: ['{NULL,"NULL","a,b","c\\"d","",é}', '{}'] },
  { name: 'ia', type: 'integer[]', values: ['{1,NULL,-2147483648}', '{}'] },
  // A nested array and one whose lower bound is not 1, of a type no sink writes as a LIST.
  { name: 'fa', type: 'double precision[]', values: ['{{1.5,NULL},{-0,Infinity}}', '[0:1]={1.5,2}'] },
  { name: 'j', type: 'json', values: ['{"a": 1, "a": 2, "n": 9007199254740993}', '1e1000'] },
  {
    name: 'jb',
    type: 'jsonb',
    values: [
      '{"big": 12345678901234567890123456789, "f": 0.1000000000000000055511151231257827}',
      '[-0, null, "é"]',
    ],
  },
  { name: 'u', type: 'uuid', values: ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'] },
  { name: 'm', type: 'money', values: ['-92233720368547758.08', '92233720368547758.07'] },
  { name: 'bits', type: 'bit varying', values: ['101010', ''] },
  { name: 'bo', type: 'boolean', values: ['t', 'f'] },
];

/** Rows of the snapshot: ids 1..n; the stream inserts the same values again under id + 100. */
export const EDGE_ROWS = Math.max(...EDGE_COLUMNS.map((c) => c.values.length));

/** `CREATE TABLE` and the snapshot's rows of `edges`. */
export function edgesSql(): { create: string; insert: string; params: (string | null)[] } {
  const columns = EDGE_COLUMNS.map((c) => `${c.name} ${c.type}`).join(', ');
  const rows: string[] = [];
  const params: (string | null)[] = [];
  for (let r = 0; r < EDGE_ROWS; r++) {
    params.push(String(r + 1));
    const cells = [`$${params.length}::int`];
    for (const c of EDGE_COLUMNS) {
      params.push(c.values[r] ?? null);
      cells.push(`$${params.length}::${c.type}`);
    }
    rows.push(`(${cells.join(', ')})`);
  }
  return {
    create: `CREATE TABLE edges (id int PRIMARY KEY, ${columns})`,
    insert: `INSERT INTO edges VALUES ${rows.join(', ')}`,
    params,
  };
}

/** A value as a sink's reader gives it, or what it is expected to be. */
export type Read = string | number | boolean | null | Read[] | { [key: string]: Read };

/** `2024-02-29 12:00:00.5` → `2024-02-29 12:00:00.500000`: a time's fraction to 6 digits. */
export const micros = (text: string) => {
  const [whole, fraction = ''] = text.split('.');
  return `${whole}.${fraction.padEnd(6, '0')}`;
};

/** An interval in the postgres style as months, days and microseconds. */
export function intervalParts(text: string): { months: number; days: number; micros: string } {
  let months = 0;
  let days = 0;
  let us = 0n;
  for (const [, n, unit] of text.matchAll(/([+-]?\d+) (year|mon|day)s?/g)) {
    if (unit === 'year') months += Number(n) * 12;
    else if (unit === 'mon') months += Number(n);
    else days += Number(n);
  }
  const time = /([+-]?)(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (time) {
    const [, sign, h, m, s, f = ''] = time;
    us =
      BigInt(h as string) * 3_600_000_000n +
      BigInt(m as string) * 60_000_000n +
      BigInt(s as string) * 1_000_000n;
    us += BigInt(f.padEnd(6, '0'));
    if (sign === '-') us = -us;
  }
  return { months, days, micros: String(us) };
}

/** A float4 as the float32 it is: the comparison of a value read back as a double. */
export const float4 = (value: number) => Math.fround(value);
