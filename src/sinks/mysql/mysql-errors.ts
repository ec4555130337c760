import type { RetryAdvice, RetryClass } from '../../core/retry-advice.js';

/** What mysql2 puts on a server's error. */
interface ServerError {
  errno?: number;
  sqlState?: string;
}

// SQLSTATE classes that no retry can heal: 22 data exception, 23 integrity constraint, 42 syntax or
// access rule (unknown table or column, privilege), 44 check option.
const PERMANENT_CLASSES = new Set(['22', '23', '42', '44']);

// Data errors MySQL reports under the catch-all HY000 or a warning class: 1265 data truncated,
// 1366 incorrect value for a column, 1292 incorrect date or time value, 3140 invalid JSON (MySQL),
// 4025 CHECK constraint failed (MariaDB's JSON_VALID), 1118 row size too large, 1406 data too long.
const PERMANENT_ERRNOS = new Set([1265, 1366, 1292, 3140, 4025, 1118, 1406]);

/**
 * Whether a server error refuses the data itself (a value, a constraint, a missing column or
 * privilege), so that writing the same batch again would fail again. Deadlocks, lock timeouts and
 * broken connections are not: they heal by retrying.
 */
export function refusesData(error: unknown): boolean {
  const { errno, sqlState } = (error ?? {}) as ServerError;
  if (typeof errno !== 'number') return false;
  return PERMANENT_ERRNOS.has(errno) || PERMANENT_CLASSES.has((sqlState ?? '').slice(0, 2));
}

// 1060 duplicate column name, 1091 cannot drop a column or key that is not there, 1054 unknown
// column (a rename already made): someone made the change by hand, or an earlier run did.
const ALREADY_DONE = new Set([1060, 1091, 1054]);

/** Whether a DDL statement failed because the table already is as it asks. */
export const alreadyDone = (error: unknown): boolean =>
  ALREADY_DONE.has(((error ?? {}) as ServerError).errno ?? -1);

// mysql2's codes for a server gone: the connection lost under a query, a session killed
// (KILL <id>), a server shutting down. The next connection is fine once the server is back.
const SERVER_GONE = new Set(['PROTOCOL_CONNECTION_LOST', 'ER_CONNECTION_KILLED', 'ER_SERVER_SHUTDOWN']);

// 1040: every connection the server allows is taken. Others end within seconds to minutes, and
// each attempt asks for more while they last.
const TOO_MANY_CONNECTIONS = 1040;

/** How long to wait, at least, for a server whose connections are all taken. */
export const TOO_MANY_CONNECTIONS_RETRY_MS = 30_000;

/** How a mysql2 error may heal, when it says; undefined for the rest (and for any other driver's). */
export function mysqlRetryAdvice(error: unknown): RetryAdvice | undefined {
  const { code, errno, sqlState } = (error ?? {}) as ServerError & { code?: unknown };
  if (typeof code !== 'string') return undefined;
  if (SERVER_GONE.has(code)) return { retry: 'until-reachable' };
  // A server's own error has its errno and SQLSTATE beside its code.
  if (errno === TOO_MANY_CONNECTIONS && typeof sqlState === 'string') {
    return { retry: 'backoff', retryAfterMs: TOO_MANY_CONNECTIONS_RETRY_MS };
  }
  return undefined;
}

// The server does not take LOAD DATA LOCAL (`local_infile` off): 4166 on MariaDB 10.5 and later,
// 3948 on MySQL 8, 1148 on older servers of both.
const LOCAL_INFILE_REFUSED = new Set([4166, 3948, 1148]);

/**
 * The server refused a LOAD DATA LOCAL because `local_infile` was turned off since the sink opened:
 * the method, not the data. Its partition is copied again, written with upserts (the sink reads
 * `local_infile` at each open, and stops loading at once).
 */
export class LocalInfileRefusedError extends Error implements RetryAdvice {
  readonly retry: RetryClass = 'backoff';

  constructor(cause: unknown) {
    super(
      `the MySQL server refused LOAD DATA LOCAL (local_infile was turned off): the partition is copied again with upserts (${(cause as Error)?.message ?? String(cause)})`,
      { cause },
    );
    this.name = 'LocalInfileRefusedError';
  }
}

/** Whether a LOAD DATA LOCAL failed because the server does not take it any more. */
export const localInfileRefused = (error: unknown): boolean =>
  LOCAL_INFILE_REFUSED.has(((error ?? {}) as ServerError).errno ?? -1);
