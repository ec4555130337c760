import pg from 'pg';
import { parseLsn } from '../../core/lsn.js';
import {
  pgComparedKey,
  pgComparisonDialect,
  pgComparisonReader,
  pgFormSql,
} from '../../core/pg-comparison.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import type { SourceComparison, SourceComparisonReader } from '../../core/table-comparison.js';
import { SOURCE_SESSION_OPTIONS } from './replication-connection.js';

/**
 * The source's side of a verification. Its session has the stream's settings (UTC, ISO dates,
 * exact floats), so that a value is spelled as the change stream spelled it to the sink; it reads
 * committed data, statement by statement, and writes nothing.
 */
export function sourceComparison(connection: pg.ClientConfig): SourceComparison {
  return {
    dialect: pgComparisonDialect,
    value: (column, form) => pgFormSql(form, column),
    key: (column) => pgComparedKey(column),
    open: () => openReader(connection),
  };
}

async function openReader(connection: pg.ClientConfig): Promise<SourceComparisonReader> {
  const client = new pg.Client({
    ...connection,
    application_name: 'replicator-verify',
    options: SOURCE_SESSION_OPTIONS,
  });
  surviveConnectionLoss(client);
  await client.connect();
  try {
    await client.query('SET default_transaction_read_only = on');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  const reader = pgComparisonReader(client, () => client.end().catch(() => undefined));
  const dialect = pgComparisonDialect;
  return {
    ...reader,
    // Read after the statements it covers: a commit is logged before it is visible.
    position: async () => {
      const rows = await reader.query(
        'SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text',
      );
      return parseLsn(rows[0]?.[0] ?? '0/0');
    },
    rowsEstimate: async (table) => {
      const rows = await reader.query(
        `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = ${pg.escapeLiteral(dialect.table(table))}::regclass`,
      );
      return Number(rows[0]?.[0] ?? 0);
    },
    inSnapshot: async (sql) => {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        // The snapshot is taken by this first statement, so its position is past every commit it sees.
        const [at] = await reader.query(
          `SELECT txid_current_snapshot()::text, (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text`,
        );
        const rows = await reader.query(sql);
        return { rows, visibility: at?.[0] ?? '', lsn: parseLsn(at?.[1] ?? '0/0') };
      } finally {
        await reader.query('COMMIT');
      }
    },
    sample: (percent) => ` TABLESAMPLE SYSTEM (${Math.min(100, Math.max(0.0001, percent))})`,
  };
}
