import { AppError } from '../errors/app-error.js';

/** Every DSN refusal: a 422 on `dsn` that names the part, never its value. */
export const invalidDsn = (problem: string) =>
  new AppError('INVALID_DSN', `dsn: ${problem}`, { field: 'dsn' });

export const isControl = (c: string) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f;

/** Whether text holds a control character (or, for a secret that may hold any other, a NUL). */
export const hasControl = (text: string, allowAllButNul = false) =>
  [...text].some((c) => (allowAllButNul ? c === '\u0000' : isControl(c)));

/** A parameter name as echoed in an error: never its value, and never a whole page of it. */
export const shown = (key: string) =>
  [...(key.length > 40 ? `${key.slice(0, 40)}…` : key)].map((c) => (isControl(c) ? '?' : c)).join('');

/** A percent-encoded part of a DSN, decoded; bad encoding is refused naming the part. */
export function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalidDsn(`the ${what} is not valid percent-encoding`);
  }
}

/**
 * Refuses (422) the first query parameter not on a type's allow-list, by name: with the reason
 * the type gives for it (what to do instead), or else the list of those it supports.
 */
export function refuseUnlistedParams(
  keys: Iterable<string>,
  allowed: readonly string[],
  unsupported: Readonly<Record<string, string>>,
): void {
  for (const key of keys) {
    if (allowed.includes(key)) continue;
    const why = unsupported[key] ?? `is not supported (supported: ${allowed.join(', ')})`;
    throw invalidDsn(`parameter '${shown(key)}' ${why}`);
  }
}
