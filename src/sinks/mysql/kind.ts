import type { ConnectionOptions } from 'mysql2';
import type { SinkKind } from '../../core/sink.js';
import {
  checkMysqlSinkTables,
  MYSQL_SINK_PROPERTIES,
  type MysqlSinkConfig,
  parseMysqlSinkProperties,
} from './config.js';
import { createMysqlSink } from './mysql-sink.js';
import { preflightMysqlSink } from './preflight.js';

/** The MySQL / MariaDB sink: upserts keyed by the primary key, the checkpoint in the same transaction. */
export const mysqlSinkKind: SinkKind<MysqlSinkConfig, ConnectionOptions> = {
  type: 'mysql',
  properties: MYSQL_SINK_PROPERTIES,
  parseProperties: parseMysqlSinkProperties,
  create: createMysqlSink,
  checkTables: (props, tables) => checkMysqlSinkTables(parseMysqlSinkProperties(props), tables),
  preflight: preflightMysqlSink,
};
