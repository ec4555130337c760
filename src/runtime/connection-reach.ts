import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { dirname } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions as NatsOptions, connect as natsConnect } from '@nats-io/transport-node';
import { Redis, type RedisOptions } from 'ioredis';
import mysql, { type ConnectionOptions as MysqlOptions } from 'mysql2/promise';
import type { DuckdbSettings } from '../sinks/duckdb/duckdb-connection-type.js';
import type { RabbitmqSettings } from '../sinks/rabbitmq/rabbitmq-connection-type.js';
import type { WebhookSettings } from '../sinks/webhook/webhook-connection-type.js';
import { Broker } from '../sinks/rabbitmq/broker.js';
import { openGuardedSocket } from '../sinks/webhook/guarded-connector.js';
import { findSourceKind } from '../source/registry.js';
import { messageOf } from './error-kinds.js';

/** One thing found about a connection: met or not, in words. */
export interface ReachCheck {
  name: string;
  ok: boolean;
  message: string;
}

/** Which side of a pipeline a connection is judged as. */
export type TestedAs = 'source' | 'sink';

type Check = (settings: unknown, timeoutMs: number, as: TestedAs) => Promise<ReachCheck[]>;

/** Checks one connection type's server: the first check is always whether it could be reached. */
export interface Reach {
  check: Check;
  /** Whether the type can be a pipeline's source (and so be judged as one). */
  canBeSource: boolean;
}

/** What a source's server is asked of when it is a sink instead: to be reached and logged in to. */
const SINK_CHECKS_OF_A_SOURCE = new Set(['reach', 'server_version', 'database_connect']);

const reached = (what: string): ReachCheck => ({ name: 'reach', ok: true, message: `Reached ${what}.` });
const unreached = (what: string, error: unknown): ReachCheck => ({
  name: 'reach',
  ok: false,
  message: `Could not reach ${what}: ${messageOf(error)}`,
});

/** Fails after `ms` unless `work` settles first; what `work` opens is its own to close. */
function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms / 1000} seconds`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A source (PostgreSQL), judged as a pipeline's source: each condition of replication, through
 * the source's own readiness checks (those a pipeline start makes, and more).
 */
async function reachSource(
  type: string,
  settings: unknown,
  timeoutMs: number,
  as: TestedAs,
): Promise<ReachCheck[]> {
  const kind = findSourceKind(type);
  if (!kind) return [{ name: 'reach', ok: false, message: `A ${type} connection cannot be a source.` }];
  const source = kind.create(settings, {});
  try {
    await source.connect({ timeoutMs });
  } catch (error) {
    await source.close().catch(() => undefined);
    return [unreached(`the ${type} server`, error)];
  }
  try {
    const checks = (await within(source.readiness(), timeoutMs, `the ${type} server`)).filter(
      (c) => as === 'source' || SINK_CHECKS_OF_A_SOURCE.has(c.name),
    );
    return [
      { name: 'reach', ok: true, message: `Reached the ${type} server and logged in.` },
      ...checks.map((c) => ({ name: c.name, ok: c.ok, message: `${c.ok ? c.found : c.problem}.` })),
    ];
  } catch (error) {
    return [
      {
        name: 'reach',
        ok: false,
        message: `Reached the ${type} server, but checking it failed: ${messageOf(error)}`,
      },
    ];
  } finally {
    await source.close().catch(() => undefined);
  }
}

async function reachMysql(settings: unknown, timeoutMs: number): Promise<ReachCheck[]> {
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection({ ...(settings as MysqlOptions), connectTimeout: timeoutMs });
  } catch (error) {
    return [unreached('the MySQL server', error)];
  }
  conn.on('error', () => {});
  try {
    const [rows] = await within(conn.query('SELECT VERSION() AS v'), timeoutMs, 'MySQL');
    const version = (rows as { v: string }[])[0]?.v ?? 'unknown';
    return [reached('the MySQL server'), { name: 'server_version', ok: true, message: `MySQL ${version}.` }];
  } catch (error) {
    return [
      { name: 'reach', ok: false, message: `Reached MySQL, but it did not answer: ${messageOf(error)}` },
    ];
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

async function reachRedis(settings: unknown, timeoutMs: number): Promise<ReachCheck[]> {
  const redis = new Redis({
    ...(settings as RedisOptions),
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  redis.on('error', () => {});
  try {
    await within(redis.connect(), timeoutMs, 'Redis');
    const info = await redis.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    return [reached('the Redis server'), { name: 'server_version', ok: true, message: `Redis ${version}.` }];
  } catch (error) {
    return [unreached('the Redis server', error)];
  } finally {
    redis.disconnect();
  }
}

async function reachNats(settings: unknown, timeoutMs: number): Promise<ReachCheck[]> {
  let nc: Awaited<ReturnType<typeof natsConnect>>;
  try {
    nc = await natsConnect({ ...(settings as NatsOptions), timeout: timeoutMs });
  } catch (error) {
    return [unreached('the NATS server', error)];
  }
  try {
    const jetstream = await jetstreamManager(nc, { timeout: timeoutMs }).then(
      () => ({ name: 'jetstream', ok: true, message: 'The server offers JetStream.' }),
      (error: unknown) => ({
        name: 'jetstream',
        ok: false,
        message: `The server offers no JetStream to this connection: ${messageOf(error)}`,
      }),
    );
    return [reached(`the NATS server ${nc.getServer()}`), jetstream];
  } finally {
    await nc.close().catch(() => undefined);
  }
}

async function reachRabbitmq(settings: unknown, timeoutMs: number): Promise<ReachCheck[]> {
  const s = settings as RabbitmqSettings;
  let broker: Broker;
  try {
    broker = await within(
      Broker.connect({ ...s, socket: { ...s.socket, timeout: timeoutMs } }),
      timeoutMs,
      'RabbitMQ',
    );
  } catch (error) {
    return [unreached(`RabbitMQ at ${s.endpoint}`, error)];
  }
  await broker.close().catch(() => undefined);
  return [reached(`RabbitMQ at ${s.endpoint}`)];
}

/** A webhook receiver: a connection is opened (to an address its DSN may reach) and closed; nothing is posted. */
async function reachWebhook(settings: unknown, timeoutMs: number): Promise<ReachCheck[]> {
  const s = settings as WebhookSettings;
  let socket: Socket;
  try {
    socket = await openGuardedSocket(s, timeoutMs);
  } catch (error) {
    return [unreached(s.endpoint, error)];
  }
  socket.destroy();
  return [reached(`${s.endpoint} (nothing was sent)`)];
}

/** A DuckDB file: its directory exists and the service may write there. */
async function reachDuckdb(settings: unknown): Promise<ReachCheck[]> {
  const { path } = settings as DuckdbSettings;
  try {
    await access(dirname(path), constants.W_OK);
    return [{ name: 'reach', ok: true, message: 'The database file can be written in its directory.' }];
  } catch {
    return [
      { name: 'reach', ok: false, message: "The database file's directory is missing or not writable." },
    ];
  }
}

const sink = (check: (settings: unknown, timeoutMs: number) => Promise<ReachCheck[]>): Reach => ({
  check,
  canBeSource: false,
});

const REACH: Record<string, Reach> = {
  postgres: {
    check: (settings, timeoutMs, as) => reachSource('postgres', settings, timeoutMs, as),
    canBeSource: true,
  },
  mysql: sink(reachMysql),
  redis: sink(reachRedis),
  nats: sink(reachNats),
  rabbitmq: sink(reachRabbitmq),
  webhook: sink(reachWebhook),
  duckdb: sink(reachDuckdb),
};

/** How a connection of `type` is checked, or undefined for a type without a check. */
export const reachOf = (type: string): Reach | undefined => REACH[type];
