import type { RetryAdvice } from '../../core/retry-advice.js';

// What ioredis says, with no code, of a command sent on a connection that is gone (the sink
// connects once and does not reconnect by itself: the next run opens another).
const CONNECTION_GONE = 'Connection is closed.';

/** How an ioredis error may heal, when it says; undefined for the rest (and for any other driver's). */
export function redisRetryAdvice(error: unknown): RetryAdvice | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof Error && code === undefined && error.message === CONNECTION_GONE) {
    return { retry: 'until-reachable' };
  }
  return undefined;
}
