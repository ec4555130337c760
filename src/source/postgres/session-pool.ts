import { createHash } from 'node:crypto';
import pg from 'pg';
import { isPgConnectionLoss, surviveConnectionLossInPool } from '../../core/pg-connection-loss.js';
import { SOURCE_SESSION_OPTIONS } from './replication-connection.js';

/**
 * How many ordinary sessions the process holds at most on one source (per connection settings),
 * however many pipelines, lag probes and checks read it. Source calls are short catalog reads:
 * one session serves them all, so a source with a shared stream sees two sessions of the service
 * (this one and the walsender), and four while a pipeline copies a table (its snapshot's two).
 * The few calls that hold it for seconds (ending a walsender left behind after a crash, dropping
 * a slot) are rare, and only delay the others' reads meanwhile.
 */
export const SOURCE_SESSIONS_PER_CONNECTION = 1;

/** A session unused this long is closed, so that a source nobody reads holds no session. */
const IDLE_SESSION_MS = 10_000;

/** pg-pool's words for a session not had in time (a connection loss to isPgConnectionLoss). */
const CONNECT_TIMEOUT_MESSAGE = 'Connection terminated due to connection timeout';

/** One holder's share of the sessions to a source: its work runs on them, until it releases them. */
export interface SessionLease {
  /**
   * Runs `work` on a session checked out of the pool, returned to it after (a session the server
   * ended is dropped, and the next call opens another). `work` may issue several queries on its
   * client but must leave the session as it found it (no open transaction, no changed setting):
   * other holders get it next. `timeoutMs` bounds the wait for a session, opening one included.
   */
  run<T>(work: (client: pg.ClientBase) => Promise<T>, options?: { timeoutMs?: number }): Promise<T>;
  /**
   * Answers `item` together with the other items asked of the pool under `kind` until a session
   * is free for them: one `work` call on one session for all (it returns one result per item, in
   * order). Many holders asking the same kind of question at once (the pipelines of a shared
   * stream, each told its table's shape again) then cost the source one round, not one each.
   * Every caller of a kind passes the same `work`. The batch belongs to the pool: a holder that
   * releases its share does not cut off the others' items.
   */
  batch<I, R>(kind: string, item: I, work: (client: pg.ClientBase, items: I[]) => Promise<R[]>): Promise<R>;
  /**
   * Gives the share back; safe twice. Work under way on the holder's sessions is cut off (as
   * closing a session of its own did) and its waits for a session fail. The last release ends the
   * pool and resolves once its sessions are closed.
   */
  release(): Promise<void>;
}

interface SharedPool {
  pool: pg.Pool;
  leases: number;
  /** The connect timeout the settings give, if any: the one a new session gets. */
  connectTimeoutMs: number | undefined;
  /** The connect timeout of the session the pool opens next: lowered for a timed checkout. */
  openTimeoutMs: number | undefined;
  /** Items of each kind waiting for a session to be answered together (SessionLease.batch). */
  batches: Map<string, PendingBatch>;
}

interface PendingBatch {
  items: unknown[];
  answers: { resolve: (result: unknown) => void; reject: (error: unknown) => void }[];
}

/** The pools of this process, by a digest of their sessions' settings (which hold the password). */
const pools = new Map<string, SharedPool>();

/**
 * A share of the process's pool of ordinary sessions for `connection`: every holder whose settings
 * are equal (password included) shares one pool of SOURCE_SESSIONS_PER_CONNECTION sessions, which
 * carry application_name `replicator` and the source's session options.
 */
export async function acquireSessionLease(connection: pg.ClientConfig): Promise<SessionLease> {
  const settings: pg.ClientConfig = {
    ...connection,
    application_name: 'replicator',
    options: SOURCE_SESSION_OPTIONS,
  };
  const key = await poolKey(settings);
  let shared = pools.get(key);
  if (!shared) {
    shared = openPool(settings);
    pools.set(key, shared);
  }
  shared.leases += 1;
  return leaseOf(key, shared);
}

function openPool(settings: pg.ClientConfig): SharedPool {
  const { connectionTimeoutMillis, ...rest } = settings;
  const shared: SharedPool = {
    pool: undefined as unknown as pg.Pool,
    leases: 0,
    connectTimeoutMs: connectionTimeoutMillis,
    openTimeoutMs: connectionTimeoutMillis,
    batches: new Map(),
  };
  // The connect timeout goes to each session, not to the pool: pg-pool would bound a wait in line
  // for a busy session by it too, and a session may be busy for seconds (see above).
  class SourceSession extends pg.Client {
    constructor() {
      super({ ...rest, connectionTimeoutMillis: shared.openTimeoutMs });
    }
  }
  shared.pool = new pg.Pool({
    max: SOURCE_SESSIONS_PER_CONNECTION,
    idleTimeoutMillis: IDLE_SESSION_MS,
    Client: SourceSession,
  });
  // A session the server ends (a restart, pg_terminate_backend) fails the call under way, idle or
  // not, never the process; the pool drops it and opens another for the next call.
  surviveConnectionLossInPool(shared.pool);
  return shared;
}

function leaseOf(key: string, shared: SharedPool): SessionLease {
  let released = false;
  const busy = new Set<pg.PoolClient>();
  const waiting = new Set<(error: Error) => void>();
  const notConnected = () => new Error('the source is not connected');
  return {
    async run(work, options = {}) {
      if (released) throw notConnected();
      const client = await checkOut(shared, options.timeoutMs, waiting);
      busy.add(client);
      let lost = false;
      try {
        return await work(client);
      } catch (error) {
        lost = isPgConnectionLoss(error);
        throw error;
      } finally {
        busy.delete(client);
        // A session the server ended (its FATAL read, its socket not closed yet) looks fine to the
        // pool: it is dropped, not handed to the next call.
        client.release(lost);
      }
    },
    batch<I, R>(kind: string, item: I, work: (client: pg.ClientBase, items: I[]) => Promise<R[]>) {
      if (released) return Promise.reject(notConnected());
      return new Promise<R>((resolve, reject) => {
        let pending = shared.batches.get(kind);
        if (!pending) {
          pending = { items: [], answers: [] };
          shared.batches.set(kind, pending);
          void answerBatch(
            shared,
            kind,
            pending,
            work as (client: pg.ClientBase, items: unknown[]) => Promise<unknown[]>,
          );
        }
        pending.items.push(item);
        pending.answers.push({ resolve: resolve as (result: unknown) => void, reject });
      });
    },
    async release() {
      if (released) return;
      released = true;
      for (const fail of [...waiting]) fail(notConnected());
      for (const client of busy) void client.end().catch(() => undefined);
      shared.leases -= 1;
      if (shared.leases > 0) return;
      if (pools.get(key) === shared) pools.delete(key);
      // Waits for the sessions still checked out (their work was just cut off) and closes the rest.
      await shared.pool.end().catch(() => undefined);
    },
  };
}

/**
 * A session of the pool, within `timeoutMs` if given; a failure registered in `waiting` ends the
 * wait (the lease was released). A session that comes after the wait ended goes back to the pool.
 */
function checkOut(
  shared: SharedPool,
  timeoutMs: number | undefined,
  waiting: Set<(error: Error) => void>,
): Promise<pg.PoolClient> {
  // pg-pool opens the session for a checkout at once when it has room: a session opened for a
  // timed checkout gives up when the checkout does, rather than trying on after it failed.
  if (timeoutMs !== undefined)
    shared.openTimeoutMs = Math.min(timeoutMs, shared.connectTimeoutMs ?? timeoutMs);
  let checkout: Promise<pg.PoolClient>;
  try {
    checkout = shared.pool.connect();
  } finally {
    shared.openTimeoutMs = shared.connectTimeoutMs;
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      waiting.delete(fail);
    };
    const fail = (error: Error) => {
      if (settled) return;
      settle();
      reject(error);
    };
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => fail(new Error(CONNECT_TIMEOUT_MESSAGE)), timeoutMs);
    waiting.add(fail);
    checkout.then(
      (client) => {
        if (settled) return client.release();
        settle();
        resolve(client);
      },
      (error: Error) => fail(error),
    );
  });
}

/** Answers a batch once a session is free: the items asked until then are in it, later ones start the next. */
async function answerBatch(
  shared: SharedPool,
  kind: string,
  pending: PendingBatch,
  work: (client: pg.ClientBase, items: unknown[]) => Promise<unknown[]>,
): Promise<void> {
  let client: pg.PoolClient | undefined;
  let lost = false;
  try {
    client = await checkOut(shared, undefined, new Set());
    if (shared.batches.get(kind) === pending) shared.batches.delete(kind);
    const results = await work(client, pending.items);
    for (const [i, answer] of pending.answers.entries()) answer.resolve(results[i]);
  } catch (error) {
    if (shared.batches.get(kind) === pending) shared.batches.delete(kind);
    lost = isPgConnectionLoss(error);
    for (const answer of pending.answers) answer.reject(error);
  } finally {
    client?.release(lost);
  }
}

/**
 * The pool's key: a digest of the settings, so the password they hold stays out of any map dump.
 * A password given as a function counts by its value; any other function and any object of a class
 * of its own (a socket) counts by identity, except a function that does nothing (pg-client-config's
 * `checkServerIdentity: () => undefined`), which is the same whatever its identity. Properties are
 * read whether enumerable or not: pg hides `ssl.key` of a settings object it was given.
 */
async function poolKey(settings: pg.ClientConfig): Promise<string> {
  const password = typeof settings.password === 'function' ? await settings.password() : settings.password;
  const text = JSON.stringify(canonical({ ...settings, password }));
  return createHash('sha256').update(text).digest('hex');
}

const identities = new WeakMap<object, number>();
let nextIdentity = 0;

function identityOf(value: object): string {
  let id = identities.get(value);
  if (id === undefined) {
    id = nextIdentity++;
    identities.set(value, id);
  }
  return `identity ${id}`;
}

function canonical(value: unknown): unknown {
  if (typeof value === 'function') {
    return /^\(\)\s*=>\s*(undefined|\{\s*\})$/.test(String(value)) ? 'no-op' : identityOf(value);
  }
  if (value === null || typeof value !== 'object') return value;
  if (Buffer.isBuffer(value)) return { buffer: value.toString('base64') };
  if (Array.isArray(value)) return value.map(canonical);
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return identityOf(value);
  const record = value as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const name of Object.getOwnPropertyNames(record).sort()) fields[name] = canonical(record[name]);
  return fields;
}
