import type { RetryAdvice, RetryClass } from './retry-advice.js';
/**
 * A server of a pipeline that refused the service's role: a login (bad password, a role that may
 * not log in, no pg_hba entry) or a privilege. Drivers word these the same whichever server said
 * them, so the message names the side and its connection; the person reading it knows which
 * server's role to fix. It needs a person, so it is never retried.
 */
export class SideRefusalError extends Error implements RetryAdvice {
  /** It needs a person: retrying cannot heal it. */
  readonly retry: RetryClass = 'never';

  /** The driver's code (SQLSTATE or MySQL's `ER_...`), kept for whoever classifies by it. */
  readonly code: string | undefined;

  constructor(
    readonly side: 'source' | 'sink',
    readonly connection: string,
    cause: unknown,
  ) {
    super(`the ${side} refused: ${side} connection '${connection}': ${messageOf(cause)}`, { cause });
    this.name = 'SideRefusalError';
    const code = (cause as { code?: unknown } | null)?.code;
    this.code = typeof code === 'string' ? code : undefined;
  }
}

// SQLSTATE class 28 (invalid authorization: a refused login or password) and 42501 (insufficient privilege).
const PG_REFUSAL = /^(28...|42501)$/;

// MySQL and MariaDB: access denied (1044 to a database, 1045 for the user and password, 1142 and
// 1143 to a table or column, 1227 a privilege), an account locked (3118) or expired (1862).
const MYSQL_REFUSALS = new Set([1044, 1045, 1142, 1143, 1227, 3118, 1862]);

/** Whether a driver's error says the server refused the role (its login or a privilege). */
export function isRefusal(error: unknown): boolean {
  if (error instanceof SideRefusalError) return false;
  const e = (error ?? {}) as { code?: unknown; errno?: unknown; sqlState?: unknown };
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string') return MYSQL_REFUSALS.has(e.errno);
  return typeof e.code === 'string' && PG_REFUSAL.test(e.code);
}

/**
 * `target` (a source or a sink) whose calls that return a promise fail, on a refusal, with a
 * SideRefusalError naming `side` and `connection`; every other failure is as it was.
 */
export function nameRefusals<T extends object>(target: T, side: 'source' | 'sink', connection: string): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = value.apply(object, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          throw isRefusal(error) ? new SideRefusalError(side, connection, error) : error;
        });
      };
    },
  });
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
