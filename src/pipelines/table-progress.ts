/** Progress of one table's snapshot, as the progress endpoint shows it. */
export interface TableProgress {
  partitionsTotal: number;
  partitionsDone: number;
  /** Estimate from the source's statistics until the copy finishes. */
  rowsTotal: number;
  rowsDone: number;
  /** When this process started copying the table, and how many rows were done then (for the ETA). */
  startedAtMs?: number;
  rowsAtStart?: number;
  /** Partitions being copied or copied by this process. */
  partitions?: Map<string, { status: 'copying' | 'done'; rows: number }>;
}

/** Percent of a table copied, 0 to 100 with two decimals; 100 once `complete`. */
export const percentOf = (done: number, total: number, complete = false) =>
  complete ? 100 : total > 0 ? Math.min(100, Math.round((done / total) * 10_000) / 100) : 0;

/** Seconds left for a table's copy at the rate seen so far, or null before there is a rate. */
export function etaSeconds(progress: TableProgress, now = Date.now()): number | null {
  if (progress.startedAtMs === undefined) return null;
  const copied = progress.rowsDone - (progress.rowsAtStart ?? 0);
  const elapsed = (now - progress.startedAtMs) / 1000;
  if (copied <= 0 || elapsed <= 0) return null;
  return Math.max(0, Math.round((progress.rowsTotal - progress.rowsDone) / (copied / elapsed)));
}
