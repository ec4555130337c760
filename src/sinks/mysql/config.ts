import { type TableRef, tableKey } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { batchLimitsOf, batchPropertyDocs, booleanProperty } from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';
import { sharedTarget, tableMapProperties, targetNameProperty } from '../target-names.js';
import { BOOKKEEPING_TABLES } from './ddl.js';

/** The MySQL sink's properties, parsed and validated. */
export interface MysqlSinkConfig extends SinkProperties {
  /** Database every target table (and the bookkeeping) lives in; undefined is the DSN's database. */
  targetDatabase: string | undefined;
  /** Explicit target names, keyed by `tableKey(source)`. A mapping without a database has `database` undefined. */
  tableMap: ReadonlyMap<string, { database: string | undefined; table: string }>;
  /** From `batch_max_events`, `batch_max_bytes` and `batch_max_wait_ms`. */
  batch: BatchLimits;
  /** Whether a missing target database and missing tables are created on open. */
  createTables: boolean;
}

/** Every property of the MySQL sink; the table of docs/sinks/mysql.md is `propertiesMarkdown` of it. */
export const MYSQL_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'target_database',
    default: "the DSN's database",
    description: 'Database the target tables and the bookkeeping tables are written to.',
  },
  {
    key: 'table.<schema>.<table>',
    default: 'the source table name',
    description: 'Target of that source table: `<table>` or `<database>.<table>`.',
  },
  ...batchPropertyDocs('applied in one transaction', 'applied'),
  {
    key: 'create_tables',
    default: 'true',
    description:
      '`true` creates a missing target database and missing tables on start; `false` requires them to exist.',
  },
];

/** Parses and validates the MySQL sink properties; throws a 422 AppError naming the bad key. */
export function parseMysqlSinkProperties(props: Record<string, string>): MysqlSinkConfig {
  const tableMap = tableMapProperties(props, MYSQL_SINK_PROPERTIES, 'database');
  const targetDatabase = targetNameProperty('target_database', props.target_database);
  return {
    targetDatabase,
    tableMap,
    batch: batchLimitsOf(props),
    createTables: booleanProperty('create_tables', props.create_tables, true),
  };
}

/**
 * The target table of a source table: the explicit mapping first, then the source table's own
 * name (`public.orders` → `orders`), in `target_database` or else `defaultDatabase` (the DSN's).
 * The `schema` of the result is the MySQL database.
 */
export function mysqlTargetOf(config: MysqlSinkConfig, source: TableRef, defaultDatabase: string): TableRef {
  const mapped = config.tableMap.get(tableKey(source));
  return {
    schema: mapped?.database ?? config.targetDatabase ?? defaultDatabase,
    table: mapped?.table ?? source.table,
  };
}

/**
 * Refuses (422) a mapping that cannot run with these source tables: a `table.<schema>.<table>`
 * naming a table the pipeline does not replicate, two source tables written to one target (the
 * default drops the schema, so `a.t` and `b.t` clash), or a target named like a bookkeeping table.
 * MySQL compares table names case-insensitively on some platforms, so names are compared so.
 */
export function checkMysqlSinkTables(config: MysqlSinkConfig, tables: readonly TableRef[]): void {
  const sources = new Set(tables.map(tableKey));
  for (const mapped of config.tableMap.keys()) {
    if (!sources.has(mapped)) {
      throw validationFailed(`sink.properties.table.${mapped}`, `'${mapped}' is not one of source.tables`);
    }
  }
  // The DSN's database is not known here: an unmapped target is told apart by its name alone.
  const targetOf = (source: TableRef) => mysqlTargetOf(config, source, '');
  for (const source of tables) {
    const target = targetOf(source);
    if ((BOOKKEEPING_TABLES as readonly string[]).includes(target.table.toLowerCase())) {
      throw validationFailed(
        'sink.properties',
        `${tableKey(source)} would be written to ${target.table}, a table the sink keeps its own state in; map it elsewhere with table.${tableKey(source)}`,
      );
    }
  }
  const shared = sharedTarget(tables, targetOf, foldedTargetKey);
  if (shared) {
    const { first, second, target } = shared;
    throw validationFailed(
      'sink.properties',
      `${tableKey(first)} and ${tableKey(second)} would both be written to ${target.schema ? `${target.schema}.` : ''}${target.table}; map one elsewhere with table.${tableKey(second)}`,
    );
  }
}

/** A target as MySQL may compare it: case-insensitively, on some platforms. */
export const foldedTargetKey = (target: TableRef): string =>
  JSON.stringify([target.schema.toLowerCase(), target.table.toLowerCase()]);
