import type { SinkKind } from '../core/sink.js';
import { duckdbSinkKind } from './duckdb/kind.js';
import { mysqlSinkKind } from './mysql/kind.js';
import { natsSinkKind } from './nats/kind.js';
import { postgresSinkKind } from './postgres/kind.js';
import { rabbitmqSinkKind } from './rabbitmq/kind.js';
import { redisSinkKind } from './redis/kind.js';
import { webhookSinkKind } from './webhook/kind.js';

export type { BatchLimits, SinkKind, SinkProperties } from '../core/sink.js';

/** Every kind of sink, one line each: a sink is a folder exporting its kind. */
const KINDS: readonly SinkKind[] = [
  postgresSinkKind,
  mysqlSinkKind,
  duckdbSinkKind,
  redisSinkKind,
  natsSinkKind,
  rabbitmqSinkKind,
  webhookSinkKind,
];

const BY_TYPE = new Map(KINDS.map((k) => [k.type, k]));

/** The sink kind of a connection type, or undefined when that type cannot be a sink. */
export const findSinkKind = (type: string): SinkKind | undefined => BY_TYPE.get(type);

/** Connection types that have a sink. */
export const sinkTypes = (): string[] => KINDS.map((k) => k.type);
