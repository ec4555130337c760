import type { PropertyDoc } from '../../core/property-docs.js';
import { batchLimitsOf, integerProperty, refuseUnknownProperties } from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';

/** The webhook sink's properties, parsed and validated. */
export interface WebhookSinkConfig extends SinkProperties {
  /** How long one request may take, connect to last byte of the answer, in milliseconds. */
  timeoutMs: number;
  /** Requests made for one batch before it fails (the first one included). */
  maxAttempts: number;
  batch: BatchLimits;
}

/** Receivers commonly limit request bodies to about a megabyte. */
const DEFAULT_BATCH_MAX_BYTES = 1024 * 1024;
const DEFAULT_BATCH_MAX_EVENTS = 5000;

/** Every property of the webhook sink, for error messages and docs/sinks/webhook.md. */
export const WEBHOOK_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'timeout_ms',
    default: '10000',
    description:
      'How long one request may take, from connecting to the last byte of the answer, in milliseconds (100..300000). A request that takes longer is abandoned and tried again.',
  },
  {
    key: 'max_attempts',
    default: '5',
    description:
      "Requests made for one batch before it fails (1..20), with exponential backoff and jitter between them, or the receiver's `Retry-After` (at most 30 s). Only timeouts, connection failures, 408, 429 and 5xx answers are tried again.",
  },
  {
    key: 'batch_max_events',
    default: String(DEFAULT_BATCH_MAX_EVENTS),
    description: 'Most change events posted in one request (1..1000000).',
  },
  {
    key: 'batch_max_bytes',
    default: String(DEFAULT_BATCH_MAX_BYTES),
    description:
      'Most bytes of change data in one request (1024..1073741824); the JSON body is somewhat larger. Keep it under the body size limit of the receiver.',
  },
  {
    key: 'batch_max_wait_ms',
    default: '0',
    description:
      'How long, in milliseconds, a batch may gather before it is posted (0..60000). 0 posts it as soon as the sink is free: the next batch gathers while one is posted.',
  },
];

/** Parses and validates the webhook sink properties; throws a 422 AppError naming the bad key. */
export function parseWebhookSinkProperties(props: Record<string, string>): WebhookSinkConfig {
  refuseUnknownProperties(props, WEBHOOK_SINK_PROPERTIES);
  return {
    timeoutMs: integerProperty('timeout_ms', props.timeout_ms, 10_000, 100, 300_000),
    maxAttempts: integerProperty('max_attempts', props.max_attempts, 5, 1, 20),
    // The defaults are smaller than other sinks': a request body, not a database transaction.
    batch: batchLimitsOf({
      ...props,
      batch_max_events: props.batch_max_events ?? String(DEFAULT_BATCH_MAX_EVENTS),
      batch_max_bytes: props.batch_max_bytes ?? String(DEFAULT_BATCH_MAX_BYTES),
    }),
  };
}
