import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import {
  checkDuckdbSinkTables,
  DUCKDB_SINK_PROPERTIES,
  type DuckdbSinkConfig,
  duckdbTargetOf,
  parseDuckdbSinkProperties,
} from './config.js';
import type { DuckdbSettings } from './duckdb-connection-type.js';

/** DuckDB, a database file on the service's machine: merged by primary key, the checkpoint in the same transaction. */
export const duckdbSinkKind: SinkKind<DuckdbSinkConfig, DuckdbSettings> = {
  type: 'duckdb',
  properties: DUCKDB_SINK_PROPERTIES,
  parseProperties: parseDuckdbSinkProperties,
  comparable: true,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) =>
    lazySink(async () => (await import('./duckdb-sink.js')).createDuckdbSink(ctx), { writesTables: true }),
  // No targetTables: the sink writes a file of its own, never the source's database.
  writtenTables: (props, tables) => {
    const config = parseDuckdbSinkProperties(props);
    return tables.map((t) => duckdbTargetOf(config, t));
  },
  checkTables: (props, tables) => checkDuckdbSinkTables(parseDuckdbSinkProperties(props), tables),
};
