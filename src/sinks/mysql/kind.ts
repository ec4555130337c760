import type { ConnectionOptions } from 'mysql2';
import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import {
  checkMysqlSinkTables,
  MYSQL_SINK_PROPERTIES,
  type MysqlSinkConfig,
  mysqlTargetOf,
  parseMysqlSinkProperties,
} from './config.js';
import { mysqlRetryAdvice } from './mysql-errors.js';

/** The DSN's database, read leniently from a stored DSN: a target's database defaults to it. */
function databaseOf(publicDsn: string): string {
  try {
    return decodeURIComponent(new URL(publicDsn).pathname.slice(1));
  } catch {
    return '';
  }
}

/** The MySQL / MariaDB sink: upserts keyed by the primary key, the checkpoint in the same transaction. */
export const mysqlSinkKind: SinkKind<MysqlSinkConfig, ConnectionOptions> = {
  type: 'mysql',
  properties: MYSQL_SINK_PROPERTIES,
  parseProperties: parseMysqlSinkProperties,
  comparable: true,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) =>
    lazySink(async () => (await import('./mysql-sink.js')).createMysqlSink(ctx), { writesTables: true }),
  writtenTables: (props, tables, publicDsn) => {
    const config = parseMysqlSinkProperties(props);
    return tables.map((t) => mysqlTargetOf(config, t, databaseOf(publicDsn)));
  },
  checkTables: (props, tables) => checkMysqlSinkTables(parseMysqlSinkProperties(props), tables),
  preflight: async (...args) => (await import('./preflight.js')).preflightMysqlSink(...args),
  retryAdvice: mysqlRetryAdvice,
};
