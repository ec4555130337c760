import { errors, RequestError } from '@nats-io/transport-node';
import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';

/**
 * A NATS server out of reach or gone: retried for as long as the outage lasts. It carries a
 * socket error `code` (the cause's own when it has one) for whoever reads the error.
 */
export class NatsUnreachableError extends Error implements RetryAdvice {
  readonly retry: RetryClass = 'until-reachable';

  constructor(
    message: string,
    readonly code: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'NatsUnreachableError';
  }
}

/** The first socket error code in an error's cause chain. */
function socketCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  }
  return undefined;
}

/**
 * The error to throw for a failed NATS call, saying what was under way (`what`): a lost, refused
 * or timed-out connection becomes a NatsUnreachableError with a socket code (the client wraps the
 * socket's error, or has none); anything else an Error with the client's as its cause.
 */
export function natsFailure(error: unknown, what: string, closed: boolean): Error {
  const message = `${what}: ${error instanceof Error ? error.message : String(error)}`;
  if (!(error instanceof Error)) return new Error(message);
  const lost =
    closed ||
    error instanceof errors.ClosedConnectionError ||
    (error instanceof errors.ConnectionError && socketCode(error) !== undefined) ||
    (error instanceof RequestError && /connection closed/i.test(error.message));
  const timedOut = error instanceof errors.TimeoutError;
  if (!lost && !timedOut) return new Error(message, { cause: error });
  const code = socketCode(error) ?? (timedOut ? 'ETIMEDOUT' : 'ECONNRESET');
  return new NatsUnreachableError(message, code, { cause: error });
}
