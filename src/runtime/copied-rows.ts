import type { TableProgress } from '../pipelines/table-progress.js';

/** What one table's copy count was at the previous sample, and of which copy (its progress entry). */
export type CopiedRowsSeen = Map<string, { progress: TableProgress; rowsDone: number }>;

/**
 * Rows copied (snapshot or backfill, all tables) since the previous sample, never negative.
 * Each table counts on its own: a count that went down (a partition rolled back) adds nothing, and
 * a table whose progress entry is new or replaced (a copy starting, or starting again) counts only
 * from where that copy began (`rowsAtStart`), never its whole count at once. Updates `seen`.
 */
export function rowsCopiedSince(seen: CopiedRowsSeen, tables: ReadonlyMap<string, TableProgress>): number {
  let rows = 0;
  for (const [name, progress] of tables) {
    const before = seen.get(name);
    const from =
      before && before.progress === progress ? before.rowsDone : (progress.rowsAtStart ?? progress.rowsDone);
    rows += Math.max(0, progress.rowsDone - from);
    seen.set(name, { progress, rowsDone: progress.rowsDone });
  }
  for (const name of seen.keys()) if (!tables.has(name)) seen.delete(name);
  return rows;
}

/**
 * Each pipeline's copy counts at its previous sample, kept as long as its figures are (the
 * figures object is the key): one per place that samples, as each has its own previous sample.
 */
export class CopiedRowsSampler {
  private readonly seen = new WeakMap<object, CopiedRowsSeen>();

  /** Rows copied since this pipeline's previous sample; at its first, each copy counts from its start. */
  since(figures: { readonly tables: ReadonlyMap<string, TableProgress> }): number {
    let seen = this.seen.get(figures);
    if (!seen) {
      seen = new Map();
      this.seen.set(figures, seen);
    }
    return rowsCopiedSince(seen, figures.tables);
  }
}
