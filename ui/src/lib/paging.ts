/** Cuts a list into pages for the pipelines list: which rows a page shows and how to name them. */

export const PAGE_SIZE = 50;

export interface Page<T> {
  items: T[];
  /** The page shown, 1-based; a page past the end shows the last one. */
  page: number;
  pages: number;
  /** 1-based positions of the first and last row shown; 0 and 0 when there are none. */
  first: number;
  last: number;
  total: number;
}

export function pageOf<T>(rows: readonly T[], page: number, size = PAGE_SIZE): Page<T> {
  const total = rows.length;
  const pages = Math.max(1, Math.ceil(total / size));
  const current = Math.min(Math.max(1, Math.floor(page) || 1), pages);
  const start = (current - 1) * size;
  const items = rows.slice(start, start + size);
  return {
    items,
    page: current,
    pages,
    first: items.length ? start + 1 : 0,
    last: start + items.length,
    total,
  };
}

/** "51–100 of 260 pipelines" (an en dash between the positions); "12 pipelines" when all are shown. */
export function rangeText(page: Page<unknown>, one: string, many: string): string {
  if (page.first <= 1 && page.last === page.total) return `${page.total} ${page.total === 1 ? one : many}`;
  return `${page.first}–${page.last} of ${page.total} ${many}`;
}
