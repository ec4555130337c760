import type pg from 'pg';
import { connectIfReachable } from '../connections/connect-if-reachable.js';
import { type TableRef, tableKey } from '../core/change.js';
import { validationFailed } from '../errors/app-error.js';
import { findSinkKind } from '../sinks/registry.js';

/** What the guard needs to know of a definition. */
export interface SinkSide {
  type: string;
  connection: pg.ClientConfig;
  properties: Record<string, string>;
}

/** Which server and database a session is on: the cluster's system identifier and the database name. */
async function databaseIdentity(client: pg.ClientBase): Promise<string | undefined> {
  try {
    const { rows } = await client.query<{ id: string }>(
      "SELECT system_identifier::text || '/' || current_database() AS id FROM pg_control_system()",
    );
    return rows[0]?.id;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a definition whose sink writes into one of its own source tables: the same server
 * (a standby shares its primary's system identifier, so that counts too) and database, and a
 * target table that is a source table. Starting it would empty the source table for the
 * snapshot. Other tables of the same database are fine targets. A sink that cannot be reached
 * is not judged here; it is checked again at every start.
 */
export async function refuseOwnSourceAsSink(
  source: pg.ClientBase,
  tables: readonly TableRef[],
  sink: SinkSide,
  connectTimeoutMs: number,
): Promise<void> {
  const targetsOf = findSinkKind(sink.type)?.targetTables;
  if (!targetsOf) return;
  const targets = new Set(targetsOf(sink.properties, tables).map(tableKey));
  const overlap = tables.filter((t) => targets.has(tableKey(t)));
  if (overlap.length === 0) return;

  const client = await connectIfReachable(sink.connection, connectTimeoutMs);
  if (!client) return;
  try {
    const [sourceId, sinkId] = await Promise.all([databaseIdentity(source), databaseIdentity(client)]);
    if (sourceId === undefined || sourceId !== sinkId) return;
    const first = tableKey(overlap[0] as TableRef);
    throw validationFailed(
      'sink.connection',
      `writes to the source database itself, and the target of ${first} is ${first}: starting would empty the ` +
        `source table. Write to another database, or set sink.properties.target_schema (or table.${first}) to another table`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
