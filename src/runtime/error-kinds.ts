import { isPgConnectionLoss } from '../core/pg-connection-loss.js';
import { type RetryAdvice, type RetryClass, retryAdviceOf } from '../core/retry-advice.js';
import { healsByRetrying, sqlstateOf } from '../core/sqlstate.js';
import { AppError } from '../errors/app-error.js';
import { sinkRetryAdvice } from '../sinks/registry.js';
import { isStoreUnreachable } from '../store/store-unreachable.js';

/**
 * How the data plane's failures are retried. The source or sink that knows a failure's cause says
 * how it may heal (`RetryAdvice`, on the errors it builds or, for its driver's own, through its
 * kind); what carries no advice is judged by what every server says alike: socket codes of a
 * server out of reach, and SQLSTATEs.
 */

// Socket errors of a server that is down or out of reach. A name that does not resolve is not
// among them: it is more often a typo than an outage, and should fail rather than wait forever.
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
  'EAI_AGAIN',
]);

// How deep an error's `cause` chain is followed.
const MAX_DEPTH = 5;

/** The advice `error` itself carries, or the one its sink kind gives its driver's error. */
const adviceOf = (error: unknown): RetryAdvice | undefined => retryAdviceOf(error) ?? sinkRetryAdvice(error);

/** Each error of `error`'s cause chain, itself first. */
function* causeChain(error: unknown): Generator<unknown> {
  for (let e = error, depth = 0; e !== null && e !== undefined && depth < MAX_DEPTH; depth++) {
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}

/**
 * Whether a failure of the data plane may heal by itself (a dropped connection, a restarting
 * server, a deadlock) and is worth retrying, or needs a person (a lost slot, a bad definition, a
 * wrong role, a change the sink refuses, a sink table changed behind the pipeline's back: retried,
 * it would be created again empty, or fail the same way). Errors of unknown kind are retried, a
 * bounded number of times (see MAX_RETRIES): they fail the pipeline if they keep coming back.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof AppError) return false;
  const advice = adviceOf(error);
  if (advice !== undefined) return advice.retry !== 'never';
  const sqlstate = sqlstateOf(error);
  return sqlstate === undefined || healsByRetrying(sqlstate);
}

/**
 * Whether a failure is a server (source, sink or the service's own store) that cannot be reached
 * or went away, or anything else its source or sink says heals once it is reachable again (a full
 * spool directory): retried for as long as it takes (see MAX_RETRIES), since the slot keeps what
 * it has not yet taken. An error wrapping another (its `cause`) is judged by what it wraps too;
 * the first error of the chain that carries advice decides.
 */
export function isUnreachable(error: unknown): boolean {
  if (!isRetryable(error)) return false;
  // The service's own metadata store, down or restarting: the data plane reads its definition there.
  if (isStoreUnreachable(error)) return true;
  for (const e of causeChain(error)) {
    const advice = adviceOf(e);
    if (advice !== undefined) return advice.retry === 'until-reachable';
    if (isConnectionLoss(e)) return true;
  }
  return false;
}

/** Whether `error` itself (not what it wraps) says that a server went away or cannot be reached. */
export function isConnectionLoss(error: unknown): boolean {
  const advice = adviceOf(error);
  if (advice !== undefined) return advice.retry === 'until-reachable';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  return isPgConnectionLoss(error);
}

/** How a failure is retried: `never`, a bounded number of times, or for as long as it lasts. */
export function retryClassOf(error: unknown): RetryClass {
  if (!isRetryable(error)) return 'never';
  return isUnreachable(error) ? 'until-reachable' : 'backoff';
}

/**
 * The least wait before the next attempt that the failure's cause calls for, in milliseconds:
 * the first advice of its cause chain that names one; 0 when none does (the runtime's backoff).
 */
export function retryAfterMsOf(error: unknown): number {
  if (!isRetryable(error)) return 0;
  for (const e of causeChain(error)) {
    const advice = adviceOf(e);
    if (advice !== undefined) return advice.retryAfterMs ?? 0;
  }
  return 0;
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
