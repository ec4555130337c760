import type pg from 'pg';
import { connectIfReachable } from '../../connections/connect-if-reachable.js';
import { type TableSchema, tableKey } from '../../core/change.js';
import { validationFailed } from '../../errors/app-error.js';
import { parsePostgresSinkProperties, targetTableOf } from './config.js';
import { qualifiedName } from './ddl.js';

/**
 * Checks, before a definition is stored or started, that the sink can create the target tables
 * it will have to create: every column type (an enum, a domain, an extension's type) must exist
 * in the sink database. Tables whose target exists already are the user's own and not judged. A
 * sink that cannot be reached is not judged here; it is checked again at start. A refused login is
 * thrown as the driver's error.
 */
export async function preflightPostgresSink(
  connection: pg.ClientConfig,
  props: Record<string, string>,
  tables: readonly TableSchema[],
  connectTimeoutMs: number,
): Promise<void> {
  const config = parsePostgresSinkProperties(props);
  if (!config.createTables) return;
  const client = await connectIfReachable(connection, connectTimeoutMs);
  if (!client) return;
  try {
    for (const table of tables) {
      const target = targetTableOf(config, table);
      const { rows } = await client.query<{ exists: boolean; missing: string[] | null }>(
        `SELECT to_regclass($1) IS NOT NULL AS exists,
                (SELECT array_agg(t) FROM unnest($2::text[]) t WHERE to_regtype(t) IS NULL) AS missing`,
        [qualifiedName(target), [...new Set(table.columns.map((c) => c.typeName))]],
      );
      const found = rows[0];
      if (found && !found.exists && found.missing) {
        throw validationFailed(
          'source.tables',
          `${tableKey(table)} uses the types ${found.missing.join(', ')}, which the sink database lacks: ` +
            `create them there (e.g. the same CREATE TYPE), or create the target table ${tableKey(target)} yourself`,
        );
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
