import pg from 'pg';
import type { TableRef } from '../../core/change.js';
import {
  PG_TEXT_SESSION_OPTIONS,
  pgComparedKey,
  pgComparisonDialect,
  pgComparisonReader,
  pgFormSql,
} from '../../core/pg-comparison.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import type { SinkComparison } from '../../core/table-comparison.js';

/**
 * A PostgreSQL sink keeps every column in the source's own type, so every value compares exactly
 * in the source's text.
 */
export function postgresComparison(
  connection: pg.ClientConfig,
  target: (table: TableRef) => TableRef,
): SinkComparison {
  return {
    dialect: pgComparisonDialect,
    target,
    column: (column) => ({ form: 'text', sql: pgFormSql('text', column) }),
    key: (column) => pgComparedKey(column),
    open: async () => {
      const client = new pg.Client({
        ...connection,
        application_name: 'replicator-verify',
        options: PG_TEXT_SESSION_OPTIONS,
      });
      surviveConnectionLoss(client);
      await client.connect();
      return pgComparisonReader(client, () => client.end().catch(() => undefined));
    },
  };
}
