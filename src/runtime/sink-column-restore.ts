import type { TableSchema } from '../core/change.js';
import type { SchemaChangeItem } from '../core/schema-diff.js';
import type { Sink } from '../core/sink.js';
import type { PipelineTableRow } from '../store/pipeline-tables-store.js';

/**
 * Gives back to the sink tables about to be copied again (backfill) the columns of their shape
 * that were dropped there by hand, so that the copy can fill them: the way back from a
 * SINK_TABLE_CHANGED for lost columns. Added as the schema review adds a column (nullable: the
 * copy gives every row its value). A table that is gone is created by the sink's open, as for a
 * first copy.
 */
export async function restoreColumnsForCopy(
  sink: Sink,
  shapes: ReadonlyMap<string, TableSchema>,
  rows: readonly PipelineTableRow[],
): Promise<void> {
  if (!sink.inspectTargets) return;
  const tables = rows.filter((r) => r.status === 'backfill').flatMap((r) => shapes.get(r.table_name) ?? []);
  if (tables.length === 0) return;
  for (const state of await sink.inspectTargets(tables)) {
    if (!state.exists || state.missingColumns.length === 0) continue;
    const table = tables.find((t) => t.schema === state.table.schema && t.table === state.table.table);
    if (!table) continue;
    const items: SchemaChangeItem[] = table.columns
      .filter((c) => state.missingColumns.includes(c.name))
      .map((c) => ({
        kind: 'add_column',
        column: c.name,
        type: c.typeName,
        nullable: true,
        existing_value: null,
      }));
    const present = {
      ...table,
      columns: table.columns.filter((c) => !state.missingColumns.includes(c.name)),
    };
    await sink.applySchemaChange(table, sink.planSchemaChange(present, items));
  }
}
