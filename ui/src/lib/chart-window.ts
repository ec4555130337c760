/**
 * The time windows of a pipeline's charts, and what a chart needs for one: the history query, the
 * time ticks and their labels, and the stored points turned into series with gaps where no
 * instance ran the pipeline.
 */

export type ChartWindow = 'live' | '1h' | '6h' | '24h';

export interface ChartWindowChoice {
  id: ChartWindow;
  /** The button's text. */
  label: string;
  /** How far back the chart reaches, in seconds. */
  seconds: number;
}

export const CHART_WINDOWS: readonly ChartWindowChoice[] = [
  { id: 'live', label: 'Live', seconds: 600 },
  { id: '1h', label: '1 h', seconds: 3_600 },
  { id: '6h', label: '6 h', seconds: 6 * 3_600 },
  { id: '24h', label: '24 h', seconds: 24 * 3_600 },
];

export const windowSeconds = (window: ChartWindow): number =>
  CHART_WINDOWS.find((w) => w.id === window)?.seconds ?? 600;

/** What the chart's caption says the window is. */
export function windowCaption(window: ChartWindow): string {
  if (window === 'live') return 'last 10 minutes, live';
  return `last ${windowSeconds(window) / 3_600} ${window === '1h' ? 'hour' : 'hours'}`;
}

/** The query string of GET /v1/pipelines/{name}/history for a window. */
export const historyQuery = (window: ChartWindow): string =>
  `window=${window === 'live' ? `${windowSeconds(window) / 60}m` : window}`;

/** Steps between two ticks, in seconds, from the finest. */
const TICK_STEPS = [
  10,
  15,
  30,
  60,
  120,
  300,
  600,
  900,
  1_800,
  3_600,
  2 * 3_600,
  3 * 3_600,
  6 * 3_600,
  12 * 3_600,
];

/** The finest step that puts at most `maxTicks` ticks over `spanSeconds`. */
export function tickStep(spanSeconds: number, maxTicks: number): number {
  const wanted = spanSeconds / Math.max(1, maxTicks);
  return TICK_STEPS.find((step) => step >= wanted) ?? 12 * 3_600;
}

/**
 * The ticks between `start` and `end` (Unix seconds), on whole steps of the local clock (a tick
 * every hour falls on the hour where the clock is offset by half an hour too), never after `end`:
 * the chart's right edge is now, and a label there must not name a time to come.
 * `offsetSeconds` is the local clock's offset east of UTC.
 */
export function timeTicks(start: number, end: number, maxTicks: number, offsetSeconds: number): number[] {
  const step = tickStep(end - start, maxTicks);
  const ticks: number[] = [];
  const first = Math.ceil((start + offsetSeconds) / step) * step - offsetSeconds;
  for (let t = first; t <= end; t += step) ticks.push(t);
  return ticks;
}

/** The local clock's offset east of UTC at `unixSeconds`, in seconds. */
export const localOffsetSeconds = (unixSeconds: number): number =>
  -new Date(unixSeconds * 1000).getTimezoneOffset() * 60;

const two = (n: number) => String(n).padStart(2, '0');

/**
 * A tick's label on the local clock: with seconds when the ticks are less than a minute apart
 * (the live window), else hours and minutes.
 */
export function tickLabel(unixSeconds: number, stepSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  return stepSeconds < 60 ? `${hm}:${two(d.getSeconds())}` : hm;
}

export interface HistoryPoint {
  at: string;
  state: string;
  events_per_second: number;
  /** Rows copied (snapshot or backfill) a second: copied rows are not events. */
  copy_rows_per_second: number;
  lag_ms: number;
}

export interface ChartSeries {
  /** Unix seconds. */
  times: number[];
  /** Null breaks the line: no instance ran the pipeline then. */
  eventsPerSecond: (number | null)[];
  copyRowsPerSecond: (number | null)[];
  lagMs: (number | null)[];
}

/** A series of no points, for a window whose history is not read yet. */
export const emptySeries = (): ChartSeries => ({
  times: [],
  eventsPerSecond: [],
  copyRowsPerSecond: [],
  lagMs: [],
});

/**
 * Whether the throughput chart draws the rows copied: only when some were copied in the window, so
 * the chart of a pipeline that only streams stays as it is.
 */
export const showsCopy = (copyRowsPerSecond: readonly (number | null)[]): boolean =>
  copyRowsPerSecond.some((v) => v !== null && v > 0);

/**
 * The stored points as series, oldest first. Two points further apart than two of their steps
 * (`resolutionSeconds`, coarser for the longer windows) have a time between them that no instance
 * ran the pipeline: a null there shows it as a gap, rather than a line drawn across it.
 */
export function historySeries(points: readonly HistoryPoint[], resolutionSeconds: number): ChartSeries {
  const series = emptySeries();
  let previous: number | undefined;
  for (const point of points) {
    const time = Date.parse(point.at) / 1000;
    if (previous !== undefined && time - previous > 2 * resolutionSeconds) {
      series.times.push((previous + time) / 2);
      series.eventsPerSecond.push(null);
      series.copyRowsPerSecond.push(null);
      series.lagMs.push(null);
    }
    series.times.push(time);
    series.eventsPerSecond.push(point.events_per_second);
    series.copyRowsPerSecond.push(point.copy_rows_per_second);
    series.lagMs.push(point.lag_ms);
    previous = time;
  }
  return series;
}

export type ChartActivity = 'no-data' | 'idle' | 'active';

/**
 * What the newest values say: none yet, `idle` (a pipeline with nothing to do: no events, no rows
 * copied and no lag, drawn as a flat line at zero, which is healthy, not stalled), or `active`.
 */
export function chartActivity(
  values: readonly (number | null)[],
  lagMs: readonly (number | null)[],
  copyRowsPerSecond: readonly (number | null)[] = [],
): ChartActivity {
  const last = values.length - 1;
  if (last < 0) return 'no-data';
  const events = values[last];
  const lag = lagMs[last];
  if (events === null || lag === null) return 'no-data';
  // A pipeline copying is busy, though copied rows are not events.
  const copying = (copyRowsPerSecond[last] ?? 0) > 0;
  return events === 0 && lag === 0 && !copying ? 'idle' : 'active';
}
