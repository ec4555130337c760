import type { DuckdbSettings } from '../../connections/duckdb-connection-type.js';
import type { SinkKind } from '../../core/sink.js';
import {
  checkDuckdbSinkTables,
  DUCKDB_SINK_PROPERTIES,
  type DuckdbSinkConfig,
  parseDuckdbSinkProperties,
} from './config.js';
import { createDuckdbSink } from './duckdb-sink.js';

/** DuckDB, a database file on the service's machine: merged by primary key, the checkpoint in the same transaction. */
export const duckdbSinkKind: SinkKind<DuckdbSinkConfig, DuckdbSettings> = {
  type: 'duckdb',
  properties: DUCKDB_SINK_PROPERTIES,
  parseProperties: parseDuckdbSinkProperties,
  create: createDuckdbSink,
  // No targetTables: the sink writes a file of its own, never the source's database.
  checkTables: (props, tables) => checkDuckdbSinkTables(parseDuckdbSinkProperties(props), tables),
};
