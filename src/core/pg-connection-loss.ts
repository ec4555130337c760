import type pg from 'pg';

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
