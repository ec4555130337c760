import { describe, expect, it } from 'vitest';
import type { ColumnSchema } from '../../src/core/change.js';
import { diffSchemas, isCompatible, isWidening } from '../../src/core/schema-diff.js';
import { col, tableOf } from '../support/table-schemas.js';

const table = (columns: ColumnSchema[], keyColumns = ['id']) => tableOf(columns, keyColumns);
const base = table([
  col('id', 'integer', { nullable: false, isKey: true }),
  col('a', 'text'),
  col('n', 'integer'),
]);

describe('schema diff', () => {
  it('finds nothing between equal schemas', () => expect(diffSchemas(base, base)).toEqual([]));

  it('finds added and dropped columns', () => {
    const proposed = table([
      base.columns[0] as ColumnSchema,
      col('n', 'integer'),
      col('b', 'jsonb', { nullable: false }),
    ]);
    expect(diffSchemas(base, proposed)).toEqual([
      { kind: 'drop_column', column: 'a' },
      { kind: 'add_column', column: 'b', type: 'jsonb', nullable: false },
    ]);
  });

  it('reads a same-place, same-type swap as a rename', () => {
    const proposed = table([base.columns[0] as ColumnSchema, col('a2', 'text'), col('n', 'integer')]);
    expect(diffSchemas(base, proposed)).toEqual([{ kind: 'rename_column', from: 'a', to: 'a2' }]);
  });

  it('finds type changes, widening or not, and nullability', () => {
    const proposed = table([
      col('id', 'bigint', { nullable: false, isKey: true }),
      col('a', 'integer', { nullable: false }),
      col('n', 'integer'),
    ]);
    expect(diffSchemas(base, proposed)).toEqual([
      { kind: 'alter_type', column: 'id', from: 'integer', to: 'bigint', widening: true },
      { kind: 'alter_type', column: 'a', from: 'text', to: 'integer', widening: false },
      { kind: 'set_not_null', column: 'a' },
    ]);
  });

  it('finds a key change', () => {
    expect(diffSchemas(base, table(base.columns, ['id', 'n']))).toEqual([
      { kind: 'change_key', from: ['id'], to: ['id', 'n'] },
    ]);
  });

  it.each([
    ['smallint', 'integer', true],
    ['integer', 'bigint', true],
    ['bigint', 'integer', false],
    ['integer', 'numeric', true],
    ['real', 'double precision', true],
    ['character varying(10)', 'character varying(20)', true],
    ['character varying(20)', 'character varying(10)', false],
    ['character varying(10)', 'text', true],
    ['numeric(10,2)', 'numeric(12,2)', true],
    ['numeric(10,2)', 'numeric(12,3)', false],
    ['text', 'integer', false],
  ])('%s to %s widens: %s', (from, to, expected) => expect(isWidening(from, to)).toBe(expected));

  it('lets auto apply only what keeps sink rows valid', () => {
    expect(isCompatible({ kind: 'add_column', column: 'x', type: 'text', nullable: false })).toBe(true);
    expect(isCompatible({ kind: 'drop_not_null', column: 'x' })).toBe(true);
    expect(
      isCompatible({ kind: 'alter_type', column: 'x', from: 'integer', to: 'bigint', widening: true }),
    ).toBe(true);
    expect(
      isCompatible({ kind: 'alter_type', column: 'x', from: 'text', to: 'integer', widening: false }),
    ).toBe(false);
    expect(isCompatible({ kind: 'drop_column', column: 'x' })).toBe(false);
    expect(isCompatible({ kind: 'rename_column', from: 'x', to: 'y' })).toBe(false);
    expect(isCompatible({ kind: 'set_not_null', column: 'x' })).toBe(false);
    expect(isCompatible({ kind: 'change_key', from: ['a'], to: ['b'] })).toBe(false);
  });
});
