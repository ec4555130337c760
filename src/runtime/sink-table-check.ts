import { type TableSchema, tableKey } from '../core/change.js';
import type { Sink } from '../core/sink.js';
import type { Source } from '../core/source.js';
import type { PipelineTableRow } from '../store/pipeline-tables-store.js';
import { type SinkTableChange, SinkTableChangedError } from './sink-table-changed.js';

export interface CopiedTablesCheck {
  pipeline: string;
  sink: Sink;
  source: Source;
  /** The shapes the sink was written with, by `schema.table`. */
  shapes: ReadonlyMap<string, TableSchema>;
  rows: readonly PipelineTableRow[];
}

/**
 * Fails with SinkTableChangedError when a sink table whose copy is done changed behind the
 * pipeline's back: it is gone (opening the sink would create it again, empty, and the pipeline
 * would report it copied), it lacks columns it was written with, or it is empty although it held
 * rows when the pipeline last stopped cleanly (nothing of the pipeline's wrote it since) and the
 * source table has rows. A sink table emptied while its source table is empty too may have
 * followed the source's own deletes, so it passes. A sink that cannot look at its tables (a
 * message sink) passes.
 */
export async function checkCopiedTables(check: CopiedTablesCheck): Promise<void> {
  const { sink, source, shapes, rows } = check;
  if (!sink.inspectTargets) return;
  const copied = rows.filter((r) => r.status === 'streaming');
  const tables = copiedShapes(rows, shapes);
  if (tables.length === 0) return;
  const states = await sink.inspectTargets(tables);
  const changes: SinkTableChange[] = [];
  const emptied: SinkTableChange[] = [];
  for (const state of states) {
    const { table, target } = state;
    if (!state.exists) {
      changes.push({ table, target, problem: 'does not exist any more' });
    } else if (state.missingColumns.length > 0) {
      changes.push({
        table,
        target,
        problem: `lacks the columns ${JSON.stringify(state.missingColumns)} it was written with`,
      });
    } else if (state.empty) {
      // Only a table known to hold rows when the pipeline last stopped cleanly was emptied behind
      // its back: one the source emptied (and the sink followed) may get rows again meanwhile.
      if (copied.find((r) => r.table_name === tableKey(table))?.sink_had_rows === true) {
        emptied.push({
          table,
          target,
          problem:
            'is empty, while it held rows when the pipeline last stopped and the source table has rows',
        });
      }
    }
  }
  if (emptied.length > 0) {
    const withRows = new Set((await source.tablesWithRows(emptied.map((e) => e.table))).map(tableKey));
    changes.push(...emptied.filter((e) => withRows.has(tableKey(e.table))));
  }
  if (changes.length > 0) throw new SinkTableChangedError(check.pipeline, changes);
}

/** The shapes, as the sink was written with them, of the tables whose copy is done. */
export function copiedShapes(
  rows: readonly PipelineTableRow[],
  shapes: ReadonlyMap<string, TableSchema>,
): TableSchema[] {
  return rows.filter((r) => r.status === 'streaming').flatMap((r) => shapes.get(r.table_name) ?? []);
}
