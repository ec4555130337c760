import type { TableRef } from '../core/change.js';
import { validationFailed } from '../errors/app-error.js';
import { findConnectionType, findSinkKind } from '../sinks/registry.js';
import { parseTableName } from './table-name.js';

/** A pipeline as far as the tables it writes go. */
export interface TargetWriter {
  name: string;
  sinkConnection: string;
  sinkProperties: Record<string, string>;
  sourceTables: readonly string[];
}

/** A sink connection by name: its type and public DSN, or undefined when there is none. */
export type SinkConnectionOf = (name: string) => { type: string; dsn: string } | undefined;

interface Written {
  pipeline: string;
  connection: string;
  table: TableRef;
}

/**
 * Every table a pipeline writes, keyed by its database (the connection's type and endpoint, so
 * two connections to one database count as one) and its name, compared case-insensitively as
 * DuckDB and MySQL do. A definition the sink cannot read writes nothing here: it is refused
 * elsewhere.
 */
function writtenBy(pipeline: TargetWriter, connectionOf: SinkConnectionOf): [string, Written][] {
  const connection = connectionOf(pipeline.sinkConnection);
  if (!connection) return [];
  const writtenTables = findSinkKind(connection.type)?.writtenTables;
  const type = findConnectionType(connection.type);
  if (!writtenTables || !type) return [];
  let tables: TableRef[];
  try {
    const sources = pipeline.sourceTables.map((t) => parseTableName(t) as TableRef);
    tables = writtenTables(pipeline.sinkProperties, sources, connection.dsn);
  } catch {
    return [];
  }
  const database = JSON.stringify([connection.type, type.endpointOf(connection.dsn)]);
  return tables.map((table) => [
    JSON.stringify([database, table.schema.toLowerCase(), table.table.toLowerCase()]),
    { pipeline: pipeline.name, connection: pipeline.sinkConnection, table },
  ]);
}

/**
 * The first pair of pipelines that would write one table of one database, each overwriting the
 * other's rows (and checkpoints' meaning): `candidates` against each other and against `others`.
 */
export function sharedTarget(
  candidates: readonly TargetWriter[],
  others: readonly TargetWriter[],
  connectionOf: SinkConnectionOf,
): { candidate: string; message: string } | undefined {
  const writers = new Map<string, Written>();
  for (const other of others) {
    for (const [key, written] of writtenBy(other, connectionOf)) writers.set(key, written);
  }
  for (const candidate of candidates) {
    const own = writtenBy(candidate, connectionOf);
    for (const [key, written] of own) {
      const first = writers.get(key);
      if (first !== undefined && first.pipeline !== written.pipeline) {
        const where =
          first.connection === written.connection
            ? `connection '${written.connection}'`
            : `the database of connections '${first.connection}' and '${written.connection}'`;
        return {
          candidate: candidate.name,
          message:
            `pipelines '${first.pipeline}' and '${written.pipeline}' would both write ` +
            `${written.table.schema}.${written.table.table} on ${where}; ` +
            'give one another target (sink properties) or another sink',
        };
      }
    }
    for (const [key, written] of own) writers.set(key, written);
  }
  return undefined;
}

/** Refuses (422 on `sink`) a pipeline that would write a table another pipeline of the project writes. */
export function refuseSharedTarget(
  candidate: TargetWriter,
  others: readonly TargetWriter[],
  connectionOf: SinkConnectionOf,
): void {
  const shared = sharedTarget(
    [candidate],
    others.filter((o) => o.name !== candidate.name),
    connectionOf,
  );
  if (shared) throw validationFailed('sink', shared.message);
}
