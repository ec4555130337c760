import { type TableRef, tableKey } from '../core/change.js';
import type { Source } from '../core/source.js';
import { validationFailed } from '../errors/app-error.js';
import { findSinkKind } from '../sinks/registry.js';
import { findSourceKind } from '../source/registry.js';

/** What the guard needs to know of a definition. */
export interface SinkSide {
  type: string;
  /** Settings of the sink's connection, as its type defines them. */
  connection: unknown;
  properties: Record<string, string>;
}

/**
 * Refuses a definition whose sink writes into one of its own source tables: the same server
 * (a standby shares its primary's system identifier, so that counts too) and database, and a
 * target table that is a source table. Starting it would empty the source table for the
 * snapshot. Other tables of the same database are fine targets. A sink that cannot be reached
 * is not judged here; it is checked again at every start.
 */
export async function refuseOwnSourceAsSink(
  source: Source,
  tables: readonly TableRef[],
  sink: SinkSide,
  connectTimeoutMs: number,
): Promise<void> {
  const targetsOf = findSinkKind(sink.type)?.targetTables;
  if (!targetsOf) return;
  const targets = new Set(targetsOf(sink.properties, tables).map(tableKey));
  const overlap = tables.filter((t) => targets.has(tableKey(t)));
  if (overlap.length === 0) return;

  // The sink's database says which one it is the way a source does: only a connection type that
  // can be read as a source can be a source's own database.
  const sinkDatabase = findSourceKind(sink.type)?.create(sink.connection);
  if (!sinkDatabase) return;
  try {
    try {
      await sinkDatabase.connect({ timeoutMs: connectTimeoutMs });
    } catch {
      return;
    }
    const [sourceId, sinkId] = await Promise.all([source.identity(), sinkDatabase.identity()]);
    if (sourceId === undefined || sourceId !== sinkId) return;
    const first = tableKey(overlap[0] as TableRef);
    throw validationFailed(
      'sink.connection',
      `writes to the source database itself, and the target of ${first} is ${first}: starting would empty the ` +
        `source table. Write to another database, or set sink.properties.target_schema (or table.${first}) to another table`,
    );
  } finally {
    await sinkDatabase.close();
  }
}
