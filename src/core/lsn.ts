/**
 * Positions in a source's change log (LSNs): 64-bit numbers, bigint in the runtime. Their text
 * form, which the store and the sinks keep in checkpoints, is PostgreSQL's own (`%X/%X`:
 * upper-case hex, no zero padding), so a formatted position compares equal to what `pg_lsn`
 * columns return.
 */

const LSN_PATTERN = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;
const MAX_LSN = (1n << 64n) - 1n;

/** The invalid (zero) LSN, `0/0`. */
export const ZERO_LSN = '0/0';

/** Thrown for a string that is not an LSN. */
export class InvalidLsnError extends Error {
  constructor(readonly text: string) {
    super(`not a PostgreSQL LSN: '${text}' (expected two hex numbers like '16/B374D848')`);
    this.name = 'InvalidLsnError';
  }
}

/** Parses `'16/B374D848'` to its 64-bit position. */
export function parseLsn(text: string): bigint {
  const match = LSN_PATTERN.exec(text);
  if (!match) throw new InvalidLsnError(text);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** Formats a 64-bit position the way PostgreSQL prints a `pg_lsn`. */
export function formatLsn(value: bigint): string {
  if (value < 0n || value > MAX_LSN) throw new RangeError(`LSN out of range: ${value}`);
  // The halves as numbers: their hex text is made without bigint arithmetic.
  return formatLsnWords(Number(value >> 32n), Number(value & 0xffffffffn));
}

/** Formats a position given as its upper and lower 32 bits (unsigned), as a message carries it. */
export function formatLsnWords(high: number, low: number): string {
  return `${high.toString(16).toUpperCase()}/${low.toString(16).toUpperCase()}`;
}

/** Re-formats an LSN text canonically (e.g. `'0/016b3748'` → `'0/16B3748'`). */
export function normalizeLsn(text: string): string {
  return formatLsn(parseLsn(text));
}

/** Negative, zero or positive as `a` is before, at or after `b`. */
export function compareLsn(a: string, b: string): number {
  const x = parseLsn(a);
  const y = parseLsn(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The latest of the given LSNs (in canonical form); `ZERO_LSN` when none is given. */
export function maxLsn(...lsns: string[]): string {
  let max = 0n;
  for (const lsn of lsns) {
    const value = parseLsn(lsn);
    if (value > max) max = value;
  }
  return formatLsn(max);
}

/** Whether `text` is a well-formed LSN. */
export function isLsn(text: string): boolean {
  return LSN_PATTERN.test(text);
}
