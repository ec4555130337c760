import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { planBatch } from '../../src/sinks/duckdb/apply-plan.js';
import { col, tableOf } from '../support/table-schemas.js';

const t = tableOf([col('id', 'integer', { isKey: true }), col('a', 'text'), col('big', 'text')], ['id']);
const u = tableOf([col('id', 'integer', { isKey: true })], ['id'], { schema: 'public', table: 'u' });
const lookup = (ref: { schema: string; table: string }) => (ref.table === 't' ? t : u);
const base = { commitLsn: 1n, xid: 1, commitTime: '' };
const ins = (id: string, a = 'x', big = 'B'): ChangeEvent => ({
  ...base,
  op: 'insert',
  table: t,
  after: { id, a, big },
});
const del = (id: string): ChangeEvent => ({ ...base, op: 'delete', table: t, key: { id } });
const upd = (id: string, a: string, oldId?: string): ChangeEvent => ({
  ...base,
  op: 'update',
  table: t,
  after: { id, a },
  unchangedToast: ['big'],
  ...(oldId ? { key: { id: oldId } } : {}),
});

describe('duckdb batch folding', () => {
  it('folds insert, delete, insert of one key into one replace with the last image', () => {
    expect(planBatch([ins('1', 'a'), del('1'), ins('1', 'b')], lookup)).toEqual([
      { op: 'replace', table: t, rows: [{ id: '1', a: 'b', big: 'B' }] },
    ]);
  });

  it('ends an insert then delete as a delete, and completes an insert by a TOAST update', () => {
    expect(planBatch([ins('1'), del('1')], lookup)).toEqual([
      { op: 'delete', table: t, keys: [{ id: '1' }] },
    ]);
    expect(planBatch([ins('1', 'a', 'B'), upd('1', 'c')], lookup)).toEqual([
      { op: 'replace', table: t, rows: [{ id: '1', a: 'c', big: 'B' }] },
    ]);
  });

  it('merges a TOAST update of a stored row, keeping the unsent column', () => {
    expect(planBatch([upd('1', 'c'), upd('1', 'd')], lookup)).toEqual([
      { op: 'merge', table: t, columns: ['id', 'a'], rows: [{ id: '1', a: 'd' }] },
    ]);
  });

  it('moves a stored row to a new key in place, after what came before', () => {
    expect(planBatch([ins('5'), upd('2', 'm', '1'), del('5')], lookup)).toEqual([
      { op: 'replace', table: t, rows: [{ id: '5', a: 'x', big: 'B' }] },
      { op: 'move', table: t, oldKey: { id: '1' }, columns: ['id', 'a'], row: { id: '2', a: 'm' } },
      { op: 'delete', table: t, keys: [{ id: '5' }] },
    ]);
  });

  it('moves a row inserted in the batch without touching the store, deleting its old key', () => {
    expect(planBatch([ins('1', 'a', 'B'), upd('2', 'm', '1')], lookup)).toEqual([
      { op: 'delete', table: t, keys: [{ id: '1' }] },
      { op: 'replace', table: t, rows: [{ id: '2', a: 'm', big: 'B' }] },
    ]);
  });

  it('drops what a truncate empties, and leaves other tables alone', () => {
    const other: ChangeEvent = { ...base, op: 'insert', table: u, after: { id: '9' } };
    expect(
      planBatch([ins('1'), other, { ...base, op: 'truncate', table: t, tables: [t] }, ins('2')], lookup),
    ).toEqual([
      { op: 'truncate', table: t },
      // Tables are independent: u's pending rows are written after t's truncate, in any order.
      { op: 'replace', table: u, rows: [{ id: '9' }] },
      { op: 'replace', table: t, rows: [{ id: '2', a: 'x', big: 'B' }] },
    ]);
  });

  it('refuses a change without its key, or with a column not in the schema', () => {
    expect(() => planBatch([{ ...base, op: 'delete', table: t, key: {} }], lookup)).toThrow(
      /lacks key column/,
    );
    expect(() =>
      planBatch([{ ...base, op: 'insert', table: t, after: { id: '1', zz: 'x' } }], lookup),
    ).toThrow(/not in its schema/);
  });
});
