/** The pipelines list's search, state filter, sort and page, read from and written to the address's query. */

export type SortKey = 'name' | 'state' | 'lag';
export type SortDir = 'asc' | 'desc';

export interface ListQuery {
  q: string;
  state: string;
  sort: SortKey;
  dir: SortDir;
  /** 1-based; a search, filter or sort starts again at 1. */
  page: number;
}

const SORT_KEYS: readonly SortKey[] = ['name', 'state', 'lag'];

export function readListQuery(search: string): ListQuery {
  const params = new URLSearchParams(search);
  const sort = params.get('sort') as SortKey | null;
  return {
    q: params.get('q') ?? '',
    state: params.get('state') ?? '',
    sort: sort && SORT_KEYS.includes(sort) ? sort : 'name',
    dir: params.get('dir') === 'desc' ? 'desc' : 'asc',
    page: pageNumber(params.get('page')),
  };
}

/** `?q=…&state=…` with only what differs from the defaults; '' when nothing does. */
export function queryString(query: ListQuery): string {
  const params = new URLSearchParams();
  if (query.q) params.set('q', query.q);
  if (query.state) params.set('state', query.state);
  if (query.sort !== 'name') params.set('sort', query.sort);
  if (query.dir !== 'asc') params.set('dir', query.dir);
  if (query.page > 1) params.set('page', String(query.page));
  const text = params.toString();
  return text ? `?${text}` : '';
}

function pageNumber(text: string | null): number {
  const page = Number(text);
  return Number.isInteger(page) && page > 1 ? page : 1;
}

interface Sortable {
  name: string;
  state: string;
  replication_lag_ms: number;
}

export function sortRows<T extends Sortable>(rows: T[], key: SortKey, dir: SortDir): T[] {
  const sign = dir === 'asc' ? 1 : -1;
  const byName = (a: T, b: T) => a.name.localeCompare(b.name);
  const compare = (a: T, b: T): number => {
    if (key === 'state') return a.state.localeCompare(b.state) || byName(a, b);
    if (key === 'lag') return a.replication_lag_ms - b.replication_lag_ms || byName(a, b);
    return byName(a, b);
  };
  return [...rows].sort((a, b) => sign * compare(a, b));
}
