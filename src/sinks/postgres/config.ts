import { type TableRef, tableKey } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { batchLimitsOf, batchPropertyDocs, booleanProperty } from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';
import { sharedTarget, tableMapProperties, targetNameProperty } from '../target-names.js';

/** The Postgres sink's properties, parsed and validated. */
export interface PostgresSinkConfig extends SinkProperties {
  /** Schema every target table lives in; undefined keeps the source table's own schema. */
  targetSchema: string | undefined;
  /** Explicit target names, keyed by `tableKey(source)`. A mapping without a schema has `schema` undefined. */
  tableMap: ReadonlyMap<string, { schema: string | undefined; table: string }>;
  /** From `batch_max_events`, `batch_max_bytes` and `batch_max_wait_ms`. */
  batch: BatchLimits;
  /** Whether missing target schemas and tables are created on open. */
  createTables: boolean;
}

/** Every property of the Postgres sink; the table of docs/sinks/postgres.md is `propertiesMarkdown` of it. */
export const POSTGRES_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'target_schema',
    default: "the source table's schema",
    description: 'Schema all target tables are written to.',
  },
  {
    key: 'table.<schema>.<table>',
    default: 'the source table name',
    description: 'Target of that source table: `<table>` or `<schema>.<table>`.',
  },
  ...batchPropertyDocs('applied in one transaction', 'applied'),
  {
    key: 'create_tables',
    default: 'true',
    description: '`true` creates missing target schemas and tables on start; `false` requires them to exist.',
  },
];

/** Key of a source table in `PostgresSinkConfig.tableMap` and in the sink's lookups. */
export { tableKey };

/** Parses and validates the Postgres sink properties; throws a 422 AppError naming the bad key. */
export function parsePostgresSinkProperties(props: Record<string, string>): PostgresSinkConfig {
  const tableMap = tableMapProperties(props, POSTGRES_SINK_PROPERTIES, 'schema');
  const targetSchema = targetNameProperty('target_schema', props.target_schema);
  return {
    targetSchema,
    tableMap,
    batch: batchLimitsOf(props),
    createTables: booleanProperty('create_tables', props.create_tables, true),
  };
}

/**
 * Refuses (422) a mapping that cannot run with these source tables: a `table.<schema>.<table>`
 * property naming a table the pipeline does not replicate, or two source tables written to one
 * target.
 */
export function checkPostgresSinkTables(config: PostgresSinkConfig, tables: readonly TableRef[]): void {
  const sources = new Set(tables.map(tableKey));
  for (const mapped of config.tableMap.keys()) {
    if (!sources.has(mapped)) {
      throw validationFailed(`sink.properties.table.${mapped}`, `'${mapped}' is not one of source.tables`);
    }
  }
  const shared = sharedTarget(tables, (source) => targetTableOf(config, source));
  if (shared) {
    const { first, second, target } = shared;
    throw validationFailed(
      'sink.properties',
      `${tableKey(first)} and ${tableKey(second)} would both be written to ${tableKey(target)}; map one elsewhere with table.${tableKey(second)}`,
    );
  }
}

/** The target table of a source table: explicit mapping first, then `target_schema`, then the source's own names. */
export function targetTableOf(config: PostgresSinkConfig, source: TableRef): TableRef {
  const mapped = config.tableMap.get(tableKey(source));
  const table = mapped?.table ?? source.table;
  const schema = mapped?.schema ?? config.targetSchema ?? source.schema;
  return { schema, table };
}
