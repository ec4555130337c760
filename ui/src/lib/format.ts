/** Texts for numbers, durations and times, in the page's language. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? '–' : integer.format(n);
}

export function formatRate(eventsPerSecond: number | null | undefined): string {
  if (eventsPerSecond === null || eventsPerSecond === undefined) return '–';
  return eventsPerSecond < 10 ? decimal.format(eventsPerSecond) : integer.format(eventsPerSecond);
}

/** A duration in milliseconds as "850 ms", "3.2 s", "4 min 10 s", "2 h 5 min". */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '–';
  if (ms < 1_000) return `${integer.format(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${decimal.format(seconds)} s`;
  return formatSeconds(Math.round(seconds));
}

/** Whole seconds as "45 s", "4 min 10 s", "2 h 5 min", "3 d 4 h". */
export function formatSeconds(total: number): string {
  const s = Math.max(0, Math.round(total));
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return s % 60 ? `${minutes} min ${s % 60} s` : `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

/**
 * Up to this many seconds ahead of the page's clock, a time is taken for now: the page's clock
 * moves once a second and may be a little behind the service's, and the times shown are of things
 * that happened, never "in 1 s".
 */
const CLOCK_SLACK_S = 60;

/** "3 s ago", "just now", relative to `now` ("in 5 min" only for a clock far behind). */
export function formatAgo(iso: string | null | undefined, now: number): string {
  if (!iso) return 'never';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const seconds = Math.round((now - at) / 1000);
  if (seconds < 1 && seconds > -CLOCK_SLACK_S) return 'just now';
  return seconds > 0 ? `${formatSeconds(seconds)} ago` : `in ${formatSeconds(-seconds)}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '–';
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : dateTime.format(at);
}

/** A state name as words: `pending_schema_approval` → `pending schema approval`. */
export function stateWords(state: string): string {
  return state.replaceAll('_', ' ');
}
