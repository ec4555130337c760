/**
 * Starts a pipeline's charts from the server's history (GET /v1/pipelines/{name}/history), so that
 * a page load shows the last minutes rather than an empty chart; the live feed then adds a sample
 * a second after them.
 */
import { api, seg } from './api';
import type { HistoryPoint } from './chart-window';
import { HISTORY_SECONDS, statsClock, statsHistory } from './pipeline-live.svelte';

const seeded = new Set<string>();

/** Puts the stored points older than the first live sample in front of the samples; once a pipeline. */
export async function seedHistory(name: string): Promise<void> {
  if (seeded.has(name)) return;
  seeded.add(name);
  let points: HistoryPoint[];
  try {
    const window = `${Math.ceil(HISTORY_SECONDS / 60)}m`;
    ({ points } = await api<{ points: HistoryPoint[] }>(
      'GET',
      `/pipelines/${seg(name)}/history?window=${window}`,
    ));
  } catch {
    seeded.delete(name);
    return;
  }
  const history = statsHistory(name);
  const firstLive = history.times[0] ?? Number.POSITIVE_INFINITY;
  const older = points
    .map((p) => ({
      time: Date.parse(p.at) / 1000,
      events: p.events_per_second,
      copy: p.copy_rows_per_second,
      lag: p.lag_ms,
    }))
    .filter((p) => p.time < firstLive);
  history.times.unshift(...older.map((p) => p.time));
  history.eventsPerSecond.unshift(...older.map((p) => p.events));
  history.copyRowsPerSecond.unshift(...older.map((p) => p.copy));
  history.lagMs.unshift(...older.map((p) => p.lag));
  statsClock.tick += 1;
}
