import { describe, expect, it } from 'vitest';
import {
  CHART_WINDOWS,
  chartActivity,
  historyQuery,
  historySeries,
  showsCopy,
  tickLabel,
  tickStep,
  timeTicks,
  windowCaption,
} from '../../ui/src/lib/chart-window.js';

const HOUR = 3_600;

describe('the windows of the charts', () => {
  it('reads the history back as far as the window reaches', () => {
    expect(CHART_WINDOWS.map((w) => [w.id, historyQuery(w.id)])).toEqual([
      ['live', 'window=10m'],
      ['1h', 'window=1h'],
      ['6h', 'window=6h'],
      ['24h', 'window=24h'],
    ]);
    expect(windowCaption('live')).toBe('last 10 minutes, live');
    expect(windowCaption('1h')).toBe('last 1 hour');
    expect(windowCaption('24h')).toBe('last 24 hours');
  });
});

describe('time ticks', () => {
  it('fit the window: about a minute apart live, hours apart over a day', () => {
    expect(tickStep(600, 6)).toBe(120);
    expect(tickStep(600, 20)).toBe(30);
    expect(tickStep(HOUR, 6)).toBe(600);
    expect(tickStep(6 * HOUR, 6)).toBe(HOUR);
    expect(tickStep(24 * HOUR, 6)).toBe(6 * HOUR);
    expect(tickStep(24 * HOUR, 12)).toBe(2 * HOUR);
  });

  it('fall on whole steps of the local clock and never after now', () => {
    const now = Date.UTC(2026, 10, 26, 21, 37, 42) / 1000;
    const ticks = timeTicks(now - 24 * HOUR, now, 12, 0);
    expect(ticks).toHaveLength(12);
    expect(ticks.every((t) => t % (2 * HOUR) === 0)).toBe(true);
    expect(Math.max(...ticks)).toBeLessThanOrEqual(now);
    expect(Math.min(...ticks)).toBeGreaterThanOrEqual(now - 24 * HOUR);
    // Half an hour east of UTC, an hourly tick is on the local hour: half past in UTC.
    const offset = timeTicks(now - 6 * HOUR, now, 6, 1_800);
    expect(offset.every((t) => (t + 1_800) % HOUR === 0)).toBe(true);
    const live = timeTicks(now - 600, now, 20, 0);
    expect(live.every((t) => t % 30 === 0 && t <= now)).toBe(true);
  });

  it('are labelled with seconds live and with hours and minutes over longer windows', () => {
    const at = new Date(2026, 10, 26, 9, 5, 7).getTime() / 1000;
    expect(tickLabel(at, 30)).toBe('09:05:07');
    expect(tickLabel(at, 2 * HOUR)).toBe('09:05');
  });
});

describe('the history as series', () => {
  const point = (at: string, events: number, lag: number, copied = 0) => ({
    at,
    state: 'running',
    events_per_second: events,
    copy_rows_per_second: copied,
    lag_ms: lag,
  });

  it('draws points a step apart as one line, and a time nobody ran the pipeline as a gap', () => {
    const series = historySeries(
      [
        point('2026-11-26T10:00:00Z', 5, 100, 40_000),
        point('2026-11-26T10:02:00Z', 6, 200),
        point('2026-11-26T10:04:00Z', 7, 300),
        point('2026-11-26T11:00:00Z', 1, 0),
      ],
      120,
    );
    const t = (iso: string) => Date.parse(iso) / 1000;
    expect(series.times).toEqual([
      t('2026-11-26T10:00:00Z'),
      t('2026-11-26T10:02:00Z'),
      t('2026-11-26T10:04:00Z'),
      t('2026-11-26T10:32:00Z'),
      t('2026-11-26T11:00:00Z'),
    ]);
    expect(series.eventsPerSecond).toEqual([5, 6, 7, null, 1]);
    expect(series.lagMs).toEqual([100, 200, 300, null, 0]);
    expect(series.copyRowsPerSecond).toEqual([40_000, 0, 0, null, 0]);
  });

  it('draws the rows copied only when some were copied in the window', () => {
    expect(showsCopy([])).toBe(false);
    expect(showsCopy([0, null, 0])).toBe(false);
    expect(showsCopy([0, null, 12.5, 0])).toBe(true);
  });

  it('takes the finer step of a short window as a gap where the coarse one is not', () => {
    const points = [point('2026-11-26T10:00:00Z', 1, 0), point('2026-11-26T10:01:00Z', 1, 0)];
    expect(historySeries(points, 10).eventsPerSecond).toEqual([1, null, 1]);
    expect(historySeries(points, 30).eventsPerSecond).toEqual([1, 1]);
  });

  it('shows an idle healthy pipeline as idle, not as no data', () => {
    expect(chartActivity([], [])).toBe('no-data');
    expect(chartActivity([3, 0], [10, 0])).toBe('idle');
    expect(chartActivity([0, 2], [0, 0])).toBe('active');
    expect(chartActivity([0, 0], [0, 40])).toBe('active');
    expect(chartActivity([1, null], [0, null])).toBe('no-data');
    // Copying a table is not idle, though no event is applied.
    expect(chartActivity([0, 0], [0, 0], [0, 9_000])).toBe('active');
    expect(chartActivity([0, 0], [0, 0], [9_000, 0])).toBe('idle');
  });
});
