import type { ConnectionType, ConnectionTypeCatalog } from '../connections/connection-types.js';
import { postgresConnectionType } from '../connections/postgres-connection-type.js';
import type { RetryAdvice } from '../core/retry-advice.js';
import type { SinkKind } from '../core/sink.js';
import { duckdbConnectionType } from './duckdb/duckdb-connection-type.js';
import { duckdbSinkKind } from './duckdb/kind.js';
import { mysqlSinkKind } from './mysql/kind.js';
import { mysqlConnectionType } from './mysql/mysql-connection-type.js';
import { natsSinkKind } from './nats/kind.js';
import { natsConnectionType } from './nats/nats-connection-type.js';
import { postgresSinkKind } from './postgres/kind.js';
import { rabbitmqSinkKind } from './rabbitmq/kind.js';
import { rabbitmqConnectionType } from './rabbitmq/rabbitmq-connection-type.js';
import { redisSinkKind } from './redis/kind.js';
import { redisConnectionType } from './redis/redis-connection-type.js';
import { webhookSinkKind } from './webhook/kind.js';
import { webhookConnectionType } from './webhook/webhook-connection-type.js';

export type { BatchLimits, SinkKind, SinkProperties } from '../core/sink.js';

/** One kind of sink: the connection type it writes to and the sink, both from its folder. */
interface Registered {
  connection: ConnectionType;
  sink: SinkKind;
}

/**
 * Every connection type and its sink, one line each: a sink kind is a folder under `src/sinks/`
 * exporting both. PostgreSQL's connection type lives in `src/connections/`, not in `postgres/`
 * here: one PostgreSQL connection serves as a source and as a sink, and the source's folder is
 * its own (nothing outside imports it), so the type belongs to neither side.
 */
const KINDS: readonly Registered[] = [
  { connection: postgresConnectionType, sink: postgresSinkKind },
  { connection: mysqlConnectionType, sink: mysqlSinkKind },
  { connection: duckdbConnectionType, sink: duckdbSinkKind },
  { connection: redisConnectionType, sink: redisSinkKind },
  { connection: natsConnectionType, sink: natsSinkKind },
  { connection: rabbitmqConnectionType, sink: rabbitmqSinkKind },
  { connection: webhookConnectionType, sink: webhookSinkKind },
];

const CONNECTION_BY_TYPE = new Map(KINDS.map((k) => [k.connection.type, k.connection]));
const SINK_BY_TYPE = new Map(KINDS.map((k) => [k.sink.type, k.sink]));

/** The `type` values of connections. */
export const connectionTypeNames = (): string[] => KINDS.map((k) => k.connection.type);

/** The connection type of that name, or undefined. */
export const findConnectionType = (type: string): ConnectionType | undefined => CONNECTION_BY_TYPE.get(type);

/** Every connection type, for the service that keeps connections. */
export const connectionTypeCatalog: ConnectionTypeCatalog = {
  find: findConnectionType,
  names: connectionTypeNames,
};

/** The sink kind of a connection type, or undefined when that type cannot be a sink. */
export const findSinkKind = (type: string): SinkKind | undefined => SINK_BY_TYPE.get(type);

/** Connection types that have a sink. */
export const sinkTypes = (): string[] => KINDS.map((k) => k.sink.type);

/**
 * The retry a driver's error calls for, as the sink kind whose driver raised it judges it
 * (`SinkKind.retryAdvice`), or undefined when no kind knows it: the runtime then judges it by
 * what every server says alike (socket codes, SQLSTATEs).
 */
export function sinkRetryAdvice(error: unknown): RetryAdvice | undefined {
  for (const { sink } of KINDS) {
    const advice = sink.retryAdvice?.(error);
    if (advice !== undefined) return advice;
  }
  return undefined;
}
