import type pg from 'pg';
import type { TableRef, TableSchema } from '../core/change.js';
import { checkPostgresSinkTables, parsePostgresSinkProperties, targetTableOf } from './postgres/config.js';
import { createPostgresSink } from './postgres/postgres-sink.js';
import { preflightPostgresSink } from './postgres/preflight.js';
import type { Sink, SinkContext } from './types.js';

/** How the runtime's batcher cuts the change stream for a sink; every sink's parsed properties carry them. */
export interface BatchLimits {
  /** Most change events in one batch. */
  maxEvents: number;
  /** Most bytes of change data in one batch. */
  maxBytes: number;
  /** Longest wait, in milliseconds, for a batch to fill before it is written anyway. */
  maxWaitMs: number;
}

/** The parsed properties of any sink. */
export interface SinkProperties {
  batch: BatchLimits;
}

/** One kind of sink: how to validate its properties and how to make an instance. */
export interface SinkKind<P extends SinkProperties = SinkProperties> {
  /** The connection type it writes to. */
  type: string;
  /** Validates the `sink.properties` of a pipeline; throws a 422 AppError on `sink.properties.<key>`. */
  parseProperties(props: Record<string, string>): P;
  /** A new, unopened sink. */
  create(ctx: SinkContext): Sink;
  /**
   * The tables a SQL sink on PostgreSQL writes `tables` to, so that a sink on the source's own
   * database can be refused before it overwrites a source table. Absent for other sinks.
   */
  targetTables?(props: Record<string, string>, tables: readonly TableRef[]): TableRef[];
  /** Refuses (422) properties that cannot run with these source tables. */
  checkTables?(props: Record<string, string>, tables: readonly TableRef[]): void;
  /** Refuses (422) tables the sink could not take, asking the sink itself; an unreachable sink passes. */
  preflight?(
    connection: pg.ClientConfig,
    props: Record<string, string>,
    tables: readonly TableSchema[],
    connectTimeoutMs: number,
  ): Promise<void>;
}

const KINDS: readonly SinkKind[] = [
  {
    type: 'postgres',
    parseProperties: parsePostgresSinkProperties,
    create: createPostgresSink,
    targetTables: (props, tables) => {
      const config = parsePostgresSinkProperties(props);
      return tables.map((t) => targetTableOf(config, t));
    },
    checkTables: (props, tables) => checkPostgresSinkTables(parsePostgresSinkProperties(props), tables),
    preflight: preflightPostgresSink,
  },
];

const BY_TYPE = new Map(KINDS.map((k) => [k.type, k]));

/** The sink kind of a connection type, or undefined when that type cannot be a sink. */
export const findSinkKind = (type: string): SinkKind | undefined => BY_TYPE.get(type);

/** Connection types that have a sink. */
export const sinkTypes = (): string[] => KINDS.map((k) => k.type);
