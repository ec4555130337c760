import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { textArrayLiteral } from '../../src/sinks/postgres/array-literal.js';

const [cluster] = inject('pgClusters');

describe('text[] literals of a set-based statement', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: cluster?.adminUrl as string });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  const readBack = async (values: (string | null)[]) =>
    (await client.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [textArrayLiteral(values)]))
      .rows[0]?.a;

  it('are read by the server as exactly the values, whatever characters they hold', async () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.string({
        unit: fc.constantFrom('"', '\\', ',', '{', '}', ' ', 'N', 'U', 'L', 'a', '\t', '\n', 'é', '𝄞'),
      }),
      fc.constantFrom('NULL', 'null', '', ' ', '""', '\\N'),
      fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\u0000')),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(value, { maxLength: 20 }), async (values) => {
        expect(await readBack(values)).toEqual(values);
      }),
      { numRuns: 300 },
    );
  });

  it('make an empty column an empty array, and keep a plain column one join', async () => {
    expect(await readBack([])).toEqual([]);
    expect(textArrayLiteral(['1', 'two', ''])).toBe('{"1","two",""}');
    expect(textArrayLiteral(['a"b', null])).toBe('{"a\\"b",NULL}');
  });
});
