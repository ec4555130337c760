/**
 * How a failure may heal, said by the source or sink that knows its cause; the runtime reads it
 * and names no server. An error that carries no advice is judged by what every server says alike
 * (socket codes, SQLSTATEs).
 *
 * - `never`: it needs a person (a refused login, a change the sink refuses); the pipeline fails.
 * - `backoff`: it may heal (a deadlock, a server that said no for now); retried a bounded number
 *   of times, then the pipeline fails.
 * - `until-reachable`: a server down, restarting or out of reach; retried for as long as it
 *   lasts once the pipeline runs, since the source's slot keeps what the sink has not taken.
 */
export type RetryClass = 'never' | 'backoff' | 'until-reachable';

/** What an error carries to say how, and how soon, to try again. */
export interface RetryAdvice {
  /** Whether, and how long, to retry. */
  readonly retry: RetryClass;
  /**
   * The least time to wait before the next attempt, when the cause calls for longer than the
   * runtime's backoff (a `Retry-After`, a full disk, too many connections).
   */
  readonly retryAfterMs?: number;
}

const CLASSES: ReadonlySet<unknown> = new Set<RetryClass>(['never', 'backoff', 'until-reachable']);

/** The advice `error` itself carries (not what it wraps), if any. */
export function retryAdviceOf(error: unknown): RetryAdvice | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { retry, retryAfterMs } = error as { retry?: unknown; retryAfterMs?: unknown };
  if (!CLASSES.has(retry)) return undefined;
  return typeof retryAfterMs === 'number' && retryAfterMs > 0
    ? { retry: retry as RetryClass, retryAfterMs }
    : { retry: retry as RetryClass };
}
