const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

/** 512 → "512 B", 1536 → "1.5 KiB", 3 * 1024 ** 3 → "3.0 GiB": sizes as a person reads them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}
