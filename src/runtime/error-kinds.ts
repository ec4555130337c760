import { SideRefusalError } from '../core/side-refusal.js';
import { FencedError } from '../core/sink.js';
import { SlotMissingError, SourceNotReadyError, TableNotReplicableError } from '../core/source-errors.js';
import { healsByRetrying, sqlstateOf } from '../core/sqlstate.js';
import { AppError } from '../errors/app-error.js';
import { RefusedChangeError } from '../sinks/refused-change.js';
import { isStoreUnreachable } from '../store/store-unreachable.js';
import { SinkTableChangedError } from './sink-table-changed.js';

/**
 * Whether a failure of the data plane may heal by itself (a dropped connection, a restarting
 * server, a deadlock) and is worth retrying, or needs a person (a lost slot, a bad definition, a
 * wrong role, a change the sink refuses, a sink table changed behind the pipeline's back: retried,
 * it would be created again empty, or fail the same way). Errors of unknown kind are retried, a bounded number of
 * times (see MAX_RETRIES): they fail the pipeline if they keep coming back.
 */
export function isRetryable(error: unknown): boolean {
  if (
    error instanceof SlotMissingError ||
    error instanceof SourceNotReadyError ||
    error instanceof TableNotReplicableError ||
    error instanceof FencedError ||
    error instanceof RefusedChangeError ||
    error instanceof SinkTableChangedError ||
    error instanceof SideRefusalError ||
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
  'ECONNABORTED',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  // A MySQL or MariaDB session killed (KILL <id>) or a server shutting down.
  'ER_CONNECTION_KILLED',
  'ER_SERVER_SHUTDOWN',
  // A webhook receiver that is down, overloaded or too slow: no connection, a timeout, or 408,
  // 429, 502, 503 or 504 after every attempt of the batch (src/sinks/webhook/delivery-errors.ts).
  'WEBHOOK_UNAVAILABLE',
]);

// Not a server, but heals the same way: a spool directory that is full waits for room (the slot
// keeps the transaction, received again whole) rather than failing the pipeline after a few tries.
const SPOOL_FULL = 'SPOOL_FULL';

// SQLSTATEs of a PostgreSQL server that ended the session: shutting down (57P01 admin, 57P02
// crash) or starting up (57P03), the session idle too long inside a transaction (25P03) or
// outside one (57P05). The next session is fine once the server is back.
const SESSION_ENDED_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '25P03']);

// What pg and ioredis say, with no code, of a connection that is gone: the socket closed under a
// query, or a query sent on a client whose connection failed earlier.
const DRIVER_CONNECTION_GONE = [
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  'Connection is closed.',
];

/**
 * Whether a failure is a server (source or sink) that cannot be reached or went away, or a full
 * spool directory: retried for as long as it takes (see MAX_RETRIES), since the slot keeps what it has not yet taken. An
 * error wrapping another (its `cause`) is judged by what it wraps too.
 */
export function isUnreachable(error: unknown): boolean {
  if (!isRetryable(error)) return false;
  if ((error as { code?: unknown } | null)?.code === SPOOL_FULL) return true;
  // The service's own metadata store, down or restarting: the data plane reads its definition there.
  if (isStoreUnreachable(error)) return true;
  for (let e: unknown = error, depth = 0; e !== null && e !== undefined && depth < 5; depth++) {
    if (isConnectionLoss(e)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Whether `error` itself (not what it wraps) says that a server went away or cannot be reached. */
export function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  const sqlstate = sqlstateOf(error);
  // Class 08 (connection exception), and a server that ended the session.
  if (sqlstate !== undefined) return sqlstate.startsWith('08') || SESSION_ENDED_SQLSTATES.has(sqlstate);
  return error instanceof Error && code === undefined && DRIVER_CONNECTION_GONE.includes(error.message);
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
