const UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `12h`, `90m`, `1h30m` or `45s` into milliseconds.
 * Returns undefined for anything else, so callers can name the offending key.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(\d+(ms|s|m|h|d))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)(ms|s|m|h|d)/g)) {
    total += Number(amount) * (UNITS_MS[unit as string] as number);
  }
  return total > 0 ? total : undefined;
}
