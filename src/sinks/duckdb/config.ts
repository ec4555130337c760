import { type TableRef, tableKey } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNameTemplate, fillNameTemplate } from '../name-template.js';
import { batchLimitsOf, batchPropertyDocs, refuseUnknownProperties } from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';
import { sharedTarget } from '../target-names.js';

/** The DuckDB sink's properties, parsed and validated. */
export interface DuckdbSinkConfig extends SinkProperties {
  /** Template of the target schema, `{schema}` and `{table}` its placeholders. */
  schemaTemplate: string;
  /** Template of the target table name. */
  tableTemplate: string;
  batch: BatchLimits;
}

/** The schema the sink keeps its checkpoint and snapshot markers in, inside the same file. */
export const BOOKKEEPING_SCHEMA = '_replicator';

/** Schemas DuckDB keeps for itself, or the sink does: never a target. */
const RESERVED_SCHEMAS = new Set([BOOKKEEPING_SCHEMA, 'temp', 'information_schema', 'pg_catalog', 'system']);

/** Every property of the DuckDB sink; the table of docs/sinks/duckdb.md is `propertiesMarkdown` of it. */
export const DUCKDB_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'table_id',
    default: '`{schema}.{table}`',
    description:
      "Target table of each source table, `<schema>.<table>` or `<table>` (in schema `main`); `{schema}` and `{table}` are replaced by the source table's names. The first `.` outside the placeholders separates schema and table. A missing schema is created. Two source tables may not share a target; DuckDB compares names case-insensitively.",
  },
  ...batchPropertyDocs('applied in one transaction', 'applied'),
];

const DEFAULT_TABLE_ID = '{schema}.{table}';
const TABLE_ID_MAX_LENGTH = 256;

/** Splits a checked template at its first `.` outside the placeholders. */
function splitTemplate(text: string): { schema: string; table: string } {
  const masked = text.replace(/\{(schema|table)\}/g, (p) => '_'.repeat(p.length));
  const dot = masked.indexOf('.');
  if (dot < 0) return { schema: 'main', table: text };
  const schema = text.slice(0, dot);
  const table = text.slice(dot + 1);
  if (masked.indexOf('.', dot + 1) >= 0) {
    throw validationFailed(
      'sink.properties.table_id',
      "must be '<table>' or '<schema>.<table>': a '.' outside the placeholders may appear once",
    );
  }
  if (schema === '' || table === '') {
    throw validationFailed('sink.properties.table_id', 'must not have an empty schema or table part');
  }
  return { schema, table };
}

/** Parses and validates the DuckDB sink properties; throws a 422 AppError naming the bad key. */
export function parseDuckdbSinkProperties(props: Record<string, string>): DuckdbSinkConfig {
  refuseUnknownProperties(props, DUCKDB_SINK_PROPERTIES);
  const text = props.table_id ?? DEFAULT_TABLE_ID;
  checkNameTemplate('table_id', text);
  if (text.length > TABLE_ID_MAX_LENGTH) {
    throw validationFailed('sink.properties.table_id', `must be at most ${TABLE_ID_MAX_LENGTH} characters`);
  }
  const { schema, table } = splitTemplate(text);
  return { schemaTemplate: schema, tableTemplate: table, batch: batchLimitsOf(props) };
}

/** The target table of a source table. */
export function duckdbTargetOf(config: DuckdbSinkConfig, source: TableRef): TableRef {
  return {
    schema: fillNameTemplate(config.schemaTemplate, source),
    table: fillNameTemplate(config.tableTemplate, source),
  };
}

/** DuckDB compares identifiers case-insensitively, even quoted ones. */
export const targetKey = (ref: TableRef): string =>
  JSON.stringify([ref.schema.toLowerCase(), ref.table.toLowerCase()]);

/**
 * Refuses (422) a `table_id` that cannot run with these source tables: two source tables written
 * to one target, a target in a schema DuckDB or the sink keeps for itself, or a name DuckDB cannot
 * take (empty, over 255 characters).
 */
export function checkDuckdbSinkTables(config: DuckdbSinkConfig, tables: readonly TableRef[]): void {
  for (const source of tables) {
    const target = duckdbTargetOf(config, source);
    if (RESERVED_SCHEMAS.has(target.schema.toLowerCase())) {
      throw validationFailed(
        'sink.properties.table_id',
        `${tableKey(source)} would be written to schema ${target.schema}, which the sink or DuckDB keeps for itself`,
      );
    }
    for (const part of [target.schema, target.table]) {
      if (part.trim() === '' || part.length > 255) {
        throw validationFailed(
          'sink.properties.table_id',
          `${tableKey(source)} would be written to a table whose schema or name is empty or longer than 255 characters`,
        );
      }
    }
  }
  const shared = sharedTarget(tables, (source) => duckdbTargetOf(config, source), targetKey);
  if (shared) {
    const { first, second, target } = shared;
    throw validationFailed(
      'sink.properties.table_id',
      `${tableKey(first)} and ${tableKey(second)} would both be written to ${target.schema}.${target.table}; use {schema} and {table} so each table has its own target`,
    );
  }
}
