import type { RedisOptions } from 'ioredis';
import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import { parseRedisSinkProperties, REDIS_SINK_PROPERTIES, type RedisSinkConfig } from './config.js';
import { redisRetryAdvice } from './redis-errors.js';

/** The Redis sink: each change a JSON envelope appended to a stream, the checkpoint in the same script. */
export const redisSinkKind: SinkKind<RedisSinkConfig, RedisOptions> = {
  type: 'redis',
  properties: REDIS_SINK_PROPERTIES,
  parseProperties: parseRedisSinkProperties,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) => lazySink(async () => (await import('./redis-sink.js')).createRedisSink(ctx)),
  retryAdvice: redisRetryAdvice,
};
