import { Redis, type RedisOptions } from 'ioredis';
import { type ReachCheck, reached, unreached, within } from '../../connections/reach-check.js';

/** A Redis server: connected to, and asked its version. */
export async function reachRedis(settings: RedisOptions, timeoutMs: number): Promise<ReachCheck[]> {
  const redis = new Redis({
    ...settings,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  redis.on('error', () => {});
  try {
    await within(redis.connect(), timeoutMs, 'Redis');
    const info = await redis.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    return [reached('the Redis server'), { name: 'server_version', ok: true, message: `Redis ${version}.` }];
  } catch (error) {
    return [unreached('the Redis server', error)];
  } finally {
    redis.disconnect();
  }
}
