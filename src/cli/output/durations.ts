/** 850 → "850 ms", 12_400 → "12.4 s", 600_000 → "10 min", 9_000_000 → "2.5 h". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** "3 s ago" from an ISO timestamp; "never" for null. */
export function formatAgo(timestamp: string | null, now = Date.now()): string {
  if (timestamp === null) return 'never';
  const ms = Math.max(0, now - Date.parse(timestamp));
  return ms < 1000 ? 'just now' : `${formatDuration(ms).replace(/\.\d/, '')} ago`;
}
