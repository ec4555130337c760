import { describe, expect, it } from 'vitest';
import { parseTableName } from '../../src/pipelines/table-name.js';

describe('table names', () => {
  it.each([
    ['public.orders', { schema: 'public', table: 'orders' }],
    ['Sales.Line_Items', { schema: 'Sales', table: 'Line_Items' }],
    ['_s.t$1', { schema: '_s', table: 't$1' }],
  ])('accepts %s', (text, parsed) => expect(parseTableName(text)).toEqual(parsed));

  it.each(['orders', 'a.b.c', '.t', 's.', '1s.t', 's.t-x', 's."t"', `s.${'x'.repeat(64)}`, 's.t;drop'])(
    'refuses %j',
    (text) => expect(parseTableName(text)).toBeUndefined(),
  );
});
