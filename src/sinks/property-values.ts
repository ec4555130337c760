import type { PropertyDoc } from '../core/property-docs.js';
import type { BatchLimits } from '../core/sink.js';
import { validationFailed } from '../errors/app-error.js';

/** Refuses (422) a key the sink does not document, listing those it does. */
export function refuseUnknownProperties(props: Record<string, string>, docs: readonly PropertyDoc[]): void {
  const known = new Set(docs.map((d) => d.key));
  for (const key of Object.keys(props)) {
    if (!known.has(key)) {
      throw validationFailed(
        `sink.properties.${key}`,
        `unknown property; known properties are ${[...known].join(', ')}`,
      );
    }
  }
}

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

/**
 * The documentation of `batch_max_events`, `batch_max_bytes` and `batch_max_wait_ms`, for a sink
 * that takes each batch whole: `batch` says what a batch is to it ("applied in one transaction"),
 * `done` what happens to it ("applied"). The limits start a write rather than cap it, because
 * transactions stay whole: the runtime splits only a transaction that passes twice a limit.
 */
export const batchPropertyDocs = (batch: string, done: string): PropertyDoc[] => [
  {
    key: 'batch_max_events',
    default: '10000',
    description: `Change events that make a batch ${batch} (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is ${done} in pieces.`,
  },
  {
    key: 'batch_max_bytes',
    default: '16777216',
    description: `Bytes of change data that make a batch ${batch} (1024..1073741824), transactions kept whole as for \`batch_max_events\`.`,
  },
  {
    key: 'batch_max_wait_ms',
    default: '0',
    description: `How long, in milliseconds, a batch may gather before it is ${done} (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written.`,
  },
];
