import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';

/**
 * Why a request to the receiver failed, and how the runtime retries it (`retry`): a receiver that
 * is down, overloaded or slow (`code` WEBHOOK_UNAVAILABLE: no connection, a timeout, 408, 429,
 * 502, 503, 504), or a resolver failing for now (EAI_AGAIN), is waited for as long as the outage
 * lasts, no sooner than its `Retry-After`; any other failure is retried a bounded number of times,
 * then fails the pipeline. `retryHere` says whether another attempt within the same batch may help.
 */
export class WebhookError extends Error implements RetryAdvice {
  readonly retry: RetryClass;

  constructor(
    message: string,
    readonly code: string | undefined,
    readonly retryHere: boolean,
    /** The receiver's `Retry-After`, in milliseconds, capped. */
    readonly retryAfterMs?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'WebhookError';
    this.retry = code === UNAVAILABLE || code === RESOLVER_FAILING ? 'until-reachable' : 'backoff';
  }
}

export const UNAVAILABLE = 'WEBHOOK_UNAVAILABLE';

/** A resolver that cannot answer now: an outage of the name service, not a wrong name. */
const RESOLVER_FAILING = 'EAI_AGAIN';

/** The longest `Retry-After` honoured: a longer one is cut to this, and the attempts go on. */
export const RETRY_AFTER_CAP_MS = 30_000;

// Socket and undici errors of a receiver that is down or went away mid-request.
const GONE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** Statuses of a receiver that is there but cannot take the batch now. */
const BUSY_STATUSES = new Set([408, 429, 502, 503, 504]);

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;

/** A request that ended without an answer: the socket's error, said for `endpoint`. */
export function requestFailed(endpoint: string, error: unknown): WebhookError {
  if (error instanceof WebhookError) return error;
  const text = error instanceof Error ? error.message : String(error);
  const code = codeOf(error);
  const said = `webhook ${endpoint}: ${text}`;
  if (typeof code === 'string' && GONE_CODES.has(code)) {
    return new WebhookError(said, UNAVAILABLE, true, undefined, { cause: error });
  }
  // A resolver failing for now keeps its code, an outage; a name that does not resolve at all
  // (ENOTFOUND) is more often a typo, and fails below.
  if (code === RESOLVER_FAILING) return new WebhookError(said, code, true, undefined, { cause: error });
  if (typeof code === 'string') {
    // A refused address, an unknown name, a certificate that does not verify: no use trying again now.
    return new WebhookError(said, code, false, undefined, { cause: error });
  }
  return new WebhookError(said, undefined, true, undefined, { cause: error });
}

/** The request ran past `timeout_ms`. */
export const timedOut = (endpoint: string, timeoutMs: number) =>
  new WebhookError(`webhook ${endpoint}: no complete answer within ${timeoutMs} ms`, UNAVAILABLE, true);

/** `Retry-After` as delay-seconds or an HTTP date, in milliseconds from `now`, capped; undefined if absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const text = value.trim();
  const ms = /^\d{1,10}$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS);
}

/** At most this much of an answer's body is shown in an error, its control characters blanked. */
const EXCERPT_CHARS = 200;

// C0 and C1 controls, line and paragraph separators, and the replacement of invalid UTF-8.
const unprintable = (code: number) =>
  code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029 || code === 0xfffd;

/** A short, printable excerpt of an answer's body; '' when empty. */
export function excerptOf(body: Buffer): string {
  const text = [...body.toString('utf8')]
    .map((c) => (unprintable(c.codePointAt(0) as number) ? ' ' : c))
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/** An answer other than 2xx. */
export function statusFailed(
  endpoint: string,
  status: number,
  retryAfter: string | string[] | undefined,
  body: Buffer,
): WebhookError {
  const excerpt = excerptOf(body);
  const said = `webhook ${endpoint} answered ${status}${excerpt ? `: ${excerpt}` : ''}`;
  if (status >= 300 && status < 400) {
    return new WebhookError(
      `${said} (redirects are not followed: give the final URL in the DSN)`,
      'WEBHOOK_REDIRECT',
      false,
    );
  }
  if (BUSY_STATUSES.has(status)) {
    return new WebhookError(said, UNAVAILABLE, true, retryAfterMs(retryAfter));
  }
  if (status >= 500) return new WebhookError(said, 'WEBHOOK_SERVER_ERROR', true, retryAfterMs(retryAfter));
  return new WebhookError(said, 'WEBHOOK_REJECTED', false);
}
