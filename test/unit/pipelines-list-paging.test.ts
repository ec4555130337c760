import { describe, expect, it } from 'vitest';
import { queryString, readListQuery } from '../../ui/src/lib/list-query.js';
import { PAGE_SIZE, pageOf, rangeText } from '../../ui/src/lib/paging.js';
import { joinProperties, splitProperties } from '../../ui/src/lib/pipeline-form.js';

const rows = Array.from({ length: 130 }, (_, i) => i + 1);

describe('paging the pipelines list', () => {
  it('cuts pages of 50 and names the rows shown', () => {
    expect(PAGE_SIZE).toBe(50);
    const second = pageOf(rows, 2);
    expect(second.items[0]).toBe(51);
    expect(second.items).toHaveLength(50);
    expect(rangeText(second, 'pipeline', 'pipelines')).toBe('51–100 of 130 pipelines');
    const last = pageOf(rows, 3);
    expect(last.items).toEqual(rows.slice(100));
    expect(rangeText(last, 'pipeline', 'pipelines')).toBe('101–130 of 130 pipelines');
  });

  it('shows the last page for a page past the end, and the first for nonsense', () => {
    expect(pageOf(rows, 9).page).toBe(3);
    expect(pageOf(rows, 0).page).toBe(1);
    expect(pageOf(rows, Number.NaN).page).toBe(1);
  });

  it('has one empty page for no rows', () => {
    const empty = pageOf([], 4);
    expect(empty).toMatchObject({ page: 1, pages: 1, first: 0, last: 0, total: 0, items: [] });
    expect(rangeText(empty, 'pipeline', 'pipelines')).toBe('0 pipelines');
    expect(rangeText(pageOf([1], 1), 'pipeline', 'pipelines')).toBe('1 pipeline');
    expect(rangeText(pageOf(rows.slice(0, 12), 1), 'pipeline', 'pipelines')).toBe('12 pipelines');
  });

  it('keeps the page in the address with the search and sort, leaving page 1 out', () => {
    const query = readListQuery('?q=ord&sort=lag&dir=desc&page=3');
    expect(query).toEqual({ q: 'ord', state: '', sort: 'lag', dir: 'desc', page: 3 });
    expect(queryString(query)).toBe('?q=ord&sort=lag&dir=desc&page=3');
    expect(queryString({ ...query, page: 1 })).toBe('?q=ord&sort=lag&dir=desc');
    expect(readListQuery('?page=-2').page).toBe(1);
    expect(readListQuery('?page=x').page).toBe(1);
  });
});

describe('sink properties in the edit form', () => {
  it('splits target_schema from the others and joins them back, blank keys left out', () => {
    const split = splitProperties({ target_schema: 'copy', 'table.public.orders': 'orders_copy' });
    expect(split).toEqual({
      targetSchema: 'copy',
      extra: [{ key: 'table.public.orders', value: 'orders_copy' }],
    });
    expect(joinProperties(split.targetSchema, [...split.extra, { key: ' ', value: 'x' }])).toEqual({
      target_schema: 'copy',
      'table.public.orders': 'orders_copy',
    });
    expect(joinProperties('', [])).toEqual({});
  });
});
