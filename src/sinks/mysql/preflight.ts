import mysql, { type ConnectionOptions } from 'mysql2/promise';
import { type TableSchema, tableKey } from '../../core/change.js';
import { isRefusal } from '../../core/side-refusal.js';
import { validationFailed } from '../../errors/app-error.js';
import { uncreatableReason } from './column-types.js';
import { mysqlTargetOf, parseMysqlSinkProperties } from './config.js';
import { binaryCollation, prepareTarget, tableExists } from './target-tables.js';

/**
 * Checks, before a definition is stored or started, that the sink can take every table: a target
 * that exists must have the source's columns and key, a missing one must be allowed and possible
 * to create (names MySQL can hold, a key short enough to index). A sink that cannot be reached is
 * not judged here; it is checked again at start. A refused login is thrown as the driver's error.
 */
export async function preflightMysqlSink(
  connection: ConnectionOptions,
  props: Record<string, string>,
  tables: readonly TableSchema[],
  connectTimeoutMs: number,
): Promise<void> {
  const config = parseMysqlSinkProperties(props);
  const database = config.targetDatabase ?? connection.database ?? '';
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection({ ...connection, connectTimeout: connectTimeoutMs });
  } catch (error) {
    // Out of reach is judged at start; a refused login is the definition's to fix now.
    if (isRefusal(error)) throw error;
    return;
  }
  conn.on('error', () => {});
  try {
    const collation = await binaryCollation(conn);
    for (const table of tables) {
      const target = mysqlTargetOf(config, table, database);
      if ((await tableExists(conn, target)) !== undefined) {
        // Reads only: the target is there, so nothing is created.
        await prepareTarget(conn, table, target, false, collation);
        continue;
      }
      if (!config.createTables) {
        throw validationFailed(
          'sink.connection',
          `target table ${tableKey(target)} of ${tableKey(table)} does not exist and create_tables is false`,
        );
      }
      const reason = uncreatableReason(target.table, table.columns, table.keyColumns);
      if (reason) {
        throw validationFailed(
          'source.tables',
          `${tableKey(table)} cannot be created in the sink: ${reason}; create the target table ${tableKey(target)} yourself`,
        );
      }
    }
  } finally {
    await conn.end().catch(() => undefined);
  }
}
