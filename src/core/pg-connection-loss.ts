import type pg from 'pg';
import { sqlstateOf } from './sqlstate.js';

/**
 * A pg client whose server ends the session (terminated, shut down, timed out in a transaction)
 * or whose socket breaks emits 'error', also while it is checked out and mid-query or between the
 * queries of a transaction. With no listener that event would end the process. The operation under
 * way fails by itself (pg rejects every queued query, and every later one as "not queryable"),
 * so the event only needs a listener for the client's whole life; what it carries is kept for
 * whoever wants to know why the connection went away.
 */
export function surviveConnectionLoss(client: pg.ClientBase, onLost?: (error: Error) => void): void {
  client.on('error', (error: Error) => {
    lost.set(client, lost.get(client) ?? error);
    onLost?.(error);
  });
}

/**
 * The same for every client a pool opens, from its connection to its end: the pool itself listens
 * only while a client is idle, never while it is checked out.
 */
export function surviveConnectionLossInPool(pool: pg.Pool): void {
  pool.on('connect', (client) => surviveConnectionLoss(client));
  // An idle client that lost its connection is dropped by the pool; the next checkout opens another.
  pool.on('error', () => undefined);
}

const lost = new WeakMap<pg.ClientBase, Error>();

/**
 * The error to report for an operation on `client` that failed: its own when it carries a code
 * (57P01, ECONNRESET …), else the one that ended the connection, if any. A query sent after the
 * server ended the session only says "not queryable"; the server's FATAL (25P03 of a session
 * idle in its transaction too long, say) tells why, and how the runtime should treat it.
 */
export function failureOn(client: pg.ClientBase, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return error;
  return lost.get(client) ?? error;
}

// SQLSTATEs of a PostgreSQL server that ended the session: shutting down (57P01 admin, 57P02
// crash) or starting up (57P03), the session idle too long inside a transaction (25P03) or
// outside one (57P05). The next session is fine once the server is back.
const SESSION_ENDED_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '25P03']);

// What pg says, with no code, of a connection that is gone: the socket closed under a query, or a
// query sent on a client whose connection failed earlier.
const DRIVER_CONNECTION_GONE = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
]);

/**
 * Whether `error` itself is a PostgreSQL server (the source, a PostgreSQL sink or the metadata
 * store) that went away or ended the session: SQLSTATE class 08 (connection exception), a session
 * ended by the server, or pg's own words for a lost connection.
 */
export function isPgConnectionLoss(error: unknown): boolean {
  const sqlstate = sqlstateOf(error);
  if (sqlstate !== undefined) return sqlstate.startsWith('08') || SESSION_ENDED_SQLSTATES.has(sqlstate);
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && code === undefined && DRIVER_CONNECTION_GONE.has(error.message);
}
