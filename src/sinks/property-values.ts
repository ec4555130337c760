import type { BatchLimits } from '../core/sink.js';
import { validationFailed } from '../errors/app-error.js';

/** An integer property within bounds; absent is `fallback`. A 422 names the key. */
export function integerProperty(
  key: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (text === undefined) return fallback;
  const value = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw validationFailed(
      `sink.properties.${key}`,
      `must be an integer from ${min} to ${max}, got '${text}'`,
    );
  }
  return value;
}

/** A `true` / `false` property; absent is `fallback`. */
export function booleanProperty(key: string, text: string | undefined, fallback: boolean): boolean {
  if (text === undefined) return fallback;
  if (text === 'true' || text === 'false') return text === 'true';
  throw validationFailed(`sink.properties.${key}`, `must be 'true' or 'false', got '${text}'`);
}

/** `batch_max_events`, `batch_max_bytes` and `batch_max_wait_ms`, which every sink takes alike. */
export const batchLimitsOf = (props: Record<string, string>): BatchLimits => ({
  maxEvents: integerProperty('batch_max_events', props.batch_max_events, 10_000, 1, 1_000_000),
  maxBytes: integerProperty(
    'batch_max_bytes',
    props.batch_max_bytes,
    16 * 1024 * 1024,
    1024,
    1024 * 1024 * 1024,
  ),
  maxWaitMs: integerProperty('batch_max_wait_ms', props.batch_max_wait_ms, 0, 0, 60_000),
});
