import type { TableRef } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNameTemplate, fillNameTemplate } from '../name-template.js';
import {
  batchLimitsOf,
  batchPropertyDocs,
  integerProperty,
  refuseUnknownProperties,
} from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';

/** The Redis sink's properties, parsed and validated. */
export interface RedisSinkConfig extends SinkProperties {
  /** Stream key template, `{schema}` and `{table}` its placeholders. */
  stream: string;
  /** Approximate most entries kept per stream (`XADD ... MAXLEN ~ n`); 0 keeps every entry. */
  maxlen: number;
  batch: BatchLimits;
}

/** Every property of the Redis sink, for error messages and docs/sinks/redis.md. */
export const REDIS_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'stream',
    default: '`{schema}.{table}`',
    description:
      "Key of the stream each table is published to; `{schema}` and `{table}` are replaced by the source table's names. Several tables may share a stream: each message names its table.",
  },
  {
    key: 'maxlen',
    default: '0',
    description:
      'Trims each stream to about this many entries as it is written (`XADD ... MAXLEN ~`), 0..1000000000; 0 keeps every entry.',
  },
  ...batchPropertyDocs('published with one checkpoint', 'published'),
];

const DEFAULT_STREAM = '{schema}.{table}';
const STREAM_MAX_LENGTH = 512;

function streamTemplate(text: string | undefined): string {
  if (text === undefined) return DEFAULT_STREAM;
  checkNameTemplate('stream', text);
  if (text.length > STREAM_MAX_LENGTH) {
    throw validationFailed('sink.properties.stream', `must be at most ${STREAM_MAX_LENGTH} characters`);
  }
  return text;
}

/** Parses and validates the Redis sink properties; throws a 422 AppError naming the bad key. */
export function parseRedisSinkProperties(props: Record<string, string>): RedisSinkConfig {
  refuseUnknownProperties(props, REDIS_SINK_PROPERTIES);
  return {
    stream: streamTemplate(props.stream),
    maxlen: integerProperty('maxlen', props.maxlen, 0, 0, 1_000_000_000),
    batch: batchLimitsOf(props),
  };
}

/** The stream key a table's messages go to. */
export function streamKeyOf(config: RedisSinkConfig, table: TableRef): string {
  return fillNameTemplate(config.stream, table);
}
