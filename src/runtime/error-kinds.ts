import { FencedError } from '../core/sink.js';
import { SlotMissingError, SourceNotReadyError, TableNotReplicableError } from '../core/source-errors.js';
import { healsByRetrying, sqlstateOf } from '../core/sqlstate.js';
import { AppError } from '../errors/app-error.js';
import { RefusedChangeError } from '../sinks/refused-change.js';

/**
 * Whether a failure of the data plane may heal by itself (a dropped connection, a restarting
 * server, a deadlock) and is worth retrying, or needs a person (a lost slot, a bad definition, a
 * wrong role, a change the sink refuses). Errors of unknown kind are retried, a bounded number of
 * times (see MAX_RETRIES): they fail the pipeline if they keep coming back.
 */
export function isRetryable(error: unknown): boolean {
  if (
    error instanceof SlotMissingError ||
    error instanceof SourceNotReadyError ||
    error instanceof TableNotReplicableError ||
    error instanceof FencedError ||
    error instanceof RefusedChangeError ||
    error instanceof AppError
  ) {
    return false;
  }
  const sqlstate = sqlstateOf(error);
  return sqlstate === undefined || healsByRetrying(sqlstate);
}

// Socket errors of a server that is down or out of reach. A name that does not resolve is not
// among them: it is more often a typo than an outage, and should fail rather than wait forever.
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  // A webhook receiver that is down, overloaded or too slow: no connection, a timeout, or 408,
  // 429, 502, 503 or 504 after every attempt of the batch (src/sinks/webhook/delivery-errors.ts).
  'WEBHOOK_UNAVAILABLE',
]);

/**
 * Whether a failure is a server (source or sink) that cannot be reached or went away: retried
 * for as long as it takes (see MAX_RETRIES), since the slot keeps what it has not yet taken.
 */
export function isUnreachable(error: unknown): boolean {
  if (!isRetryable(error)) return false;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  const sqlstate = sqlstateOf(error);
  // Class 08 (connection exception), and a server shutting down or starting up.
  return (
    sqlstate !== undefined && (sqlstate.startsWith('08') || sqlstate === '57P01' || sqlstate === '57P03')
  );
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
