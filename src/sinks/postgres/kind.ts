import type pg from 'pg';
import type { SinkKind } from '../../core/sink.js';
import {
  checkPostgresSinkTables,
  POSTGRES_SINK_PROPERTIES,
  type PostgresSinkConfig,
  parsePostgresSinkProperties,
  targetTableOf,
} from './config.js';
import { createPostgresSink } from './postgres-sink.js';
import { preflightPostgresSink } from './preflight.js';

/** The PostgreSQL sink: upserts keyed by the primary key, the checkpoint in the same transaction. */
export const postgresSinkKind: SinkKind<PostgresSinkConfig, pg.ClientConfig> = {
  type: 'postgres',
  properties: POSTGRES_SINK_PROPERTIES,
  parseProperties: parsePostgresSinkProperties,
  create: createPostgresSink,
  comparable: true,
  targetTables: (props, tables) => {
    const config = parsePostgresSinkProperties(props);
    return tables.map((t) => targetTableOf(config, t));
  },
  writtenTables: (props, tables) => {
    const config = parsePostgresSinkProperties(props);
    return tables.map((t) => targetTableOf(config, t));
  },
  checkTables: (props, tables) => checkPostgresSinkTables(parsePostgresSinkProperties(props), tables),
  preflight: preflightPostgresSink,
};
