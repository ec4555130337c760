import type { RetryClass } from '../../core/retry-advice.js';
import type { RabbitmqSettings } from './rabbitmq-connection-type.js';

/**
 * The sink's errors, built new rather than passed on: each says where (host, port, vhost, never
 * the user's password) and may carry a `code`. A connection that went away is retried for as
 * long as the outage lasts (`retry`); one that could not be opened keeps its socket code, which
 * the runtime reads as it reads any server's (an outage waits, a name that does not resolve
 * fails); anything else (a refused login, a missing permission, a message the broker refuses) is
 * retried a bounded number of times.
 */
export class BrokerError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    readonly retry?: RetryClass,
  ) {
    super(message);
    this.name = 'BrokerError';
  }
}

/** Socket codes kept as they are: the runtime tells an outage (or a typo) by them. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/** The text of an error with the password, should it be in it, masked. */
export function cleanMessage(error: unknown, settings: Pick<RabbitmqSettings, 'password'>): string {
  const text = error instanceof Error ? error.message : String(error);
  const { password } = settings;
  if (!password) return text;
  return [password, encodeURIComponent(password)].reduce((t, secret) => t.split(secret).join('****'), text);
}

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;

/** A connection that could not be opened. */
export function connectFailed(settings: RabbitmqSettings, error: unknown): BrokerError {
  const text = cleanMessage(error, settings);
  const code = codeOf(error);
  let kept: string | undefined;
  if (typeof code === 'string' && SOCKET_CODES.has(code)) kept = code;
  // amqplib's own connect timeout, and a server that hangs up during the handshake (one
  // starting or stopping, or a proxy in front of one that is down), are outages too.
  else if (/\bETIMEDOUT\b/.test(text)) kept = 'ETIMEDOUT';
  else if (/closed abruptly|Unexpected close/i.test(text)) kept = 'ECONNRESET';
  return new BrokerError(`cannot connect to RabbitMQ at ${settings.endpoint}: ${text}`, kept);
}

/**
 * The connection went away: the socket broke, heartbeats stopped, or the broker closed it (a
 * restart, a node shutting down, an operator closing it). Whatever the cause, the code is a
 * socket one (ECONNRESET unless the socket gave its own) so the runtime waits for the broker as
 * for any outage; a cause that does not heal fails again at connect, where it counts as such.
 */
export function connectionLost(settings: RabbitmqSettings, cause: unknown): BrokerError {
  const code = codeOf(cause);
  const text = cleanMessage(cause, settings);
  const kept =
    typeof code === 'string' && SOCKET_CODES.has(code)
      ? code
      : /Heartbeat timeout/i.test(text)
        ? 'ETIMEDOUT'
        : 'ECONNRESET';
  return new BrokerError(
    `lost the connection to RabbitMQ at ${settings.endpoint}: ${text}`,
    kept,
    'until-reachable',
  );
}

/** The broker closed a channel (a missing exchange, a refused permission, a message too large). */
export function channelClosed(settings: RabbitmqSettings, cause: unknown): BrokerError {
  return new BrokerError(
    `RabbitMQ at ${settings.endpoint} closed the channel: ${cleanMessage(cause, settings)}`,
    undefined,
    'backoff',
  );
}
