import type { ConnectionOptions } from 'mysql2';
import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import {
  checkMysqlSinkTables,
  MYSQL_SINK_PROPERTIES,
  type MysqlSinkConfig,
  parseMysqlSinkProperties,
} from './config.js';

/** The MySQL / MariaDB sink: upserts keyed by the primary key, the checkpoint in the same transaction. */
export const mysqlSinkKind: SinkKind<MysqlSinkConfig, ConnectionOptions> = {
  type: 'mysql',
  properties: MYSQL_SINK_PROPERTIES,
  parseProperties: parseMysqlSinkProperties,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) =>
    lazySink(async () => (await import('./mysql-sink.js')).createMysqlSink(ctx), { writesTables: true }),
  checkTables: (props, tables) => checkMysqlSinkTables(parseMysqlSinkProperties(props), tables),
  preflight: async (...args) => (await import('./preflight.js')).preflightMysqlSink(...args),
};
