import type { DatabasePool } from 'slonik';
import { type TableRef, type TableSchema, tableKey } from '../core/change.js';
import type { GoneTable, Source } from '../core/source.js';
import { TableNotReplicableError } from '../core/source-errors.js';
import type { Logger } from '../log/logger.js';
import { type PipelineTableRow, pipelineTablesStore } from '../store/pipeline-tables-store.js';
import type { PipelineStats } from './pipeline-stats.js';

/** Why a table copied before and now missing at a start is shown dropped. */
export const MISSING_REASON = 'does not exist at the source any more (dropped, or renamed)';

/** Tables copied into the sink at least once: missing at the source, they were dropped there. */
const copiedTables = (rows: readonly PipelineTableRow[]) =>
  new Set(rows.filter((r) => r.status === 'streaming' || r.status === 'backfill').map((r) => r.table_name));

const droppedTables = (rows: readonly PipelineTableRow[]) =>
  new Set(rows.filter((r) => r.status === 'dropped').map((r) => r.table_name));

/**
 * The schema of each table of a pipeline the source still has, leaving out the tables marked
 * dropped and those copied before that are missing now (returned as `missing`). A missing table
 * never copied (a new one in the definition) is still refused: it is a mistake in the definition.
 *
 * @throws TableNotReplicableError naming every other table that cannot be replicated.
 */
export async function describeKeptTables(
  source: Source,
  tables: readonly TableRef[],
  rows: readonly PipelineTableRow[],
): Promise<{ schemas: TableSchema[]; missing: TableRef[] }> {
  const dropped = droppedTables(rows);
  const copied = copiedTables(rows);
  const wanted = tables.filter((t) => !dropped.has(tableKey(t)));
  try {
    return { schemas: await source.describeTables(wanted), missing: [] };
  } catch (error) {
    if (!(error instanceof TableNotReplicableError)) throw error;
    const isGone = (p: TableNotReplicableError['problems'][number]) =>
      p.reason === 'missing' && copied.has(tableKey(p));
    const others = error.problems.filter((p) => !isGone(p));
    if (others.length > 0) throw new TableNotReplicableError(others);
    const missing = wanted.filter((t) => error.problems.some((p) => tableKey(p) === tableKey(t)));
    const kept = wanted.filter((t) => !missing.includes(t));
    return { schemas: await source.describeTables(kept), missing };
  }
}

export interface DroppedTablesDeps {
  pool: DatabasePool;
  pipelineId: string;
  stats: PipelineStats;
  logger: Logger;
}

/**
 * The tables of one run of a pipeline that are gone from the source: marked `dropped` in the store
 * with their reason, and named in the pipeline's warning until they are removed from the
 * definition or copied again. Their changes already in the stream are still applied, and the
 * sink's copy is left as it is: nothing of a user's data is deleted for a table dropped upstream.
 */
export class DroppedTables {
  private readonly names = new Set<string>();

  constructor(private readonly deps: DroppedTablesDeps) {}

  /** Takes over the tables the store shows dropped already (from an earlier run). */
  static async load(deps: DroppedTablesDeps, rows: readonly PipelineTableRow[]): Promise<DroppedTables> {
    const dropped = new DroppedTables(deps);
    for (const name of droppedTables(rows)) dropped.names.add(name);
    dropped.showWarning();
    return dropped;
  }

  has(table: string): boolean {
    return this.names.has(table);
  }

  /** The tables of `tables` not dropped. */
  without<T extends TableRef>(tables: readonly T[]): T[] {
    return tables.filter((t) => !this.names.has(tableKey(t)));
  }

  /** Records tables found gone from the source. */
  async mark(gone: readonly GoneTable[]): Promise<void> {
    for (const { table, reason } of gone) {
      const name = tableKey(table);
      if (this.names.has(name)) continue;
      await pipelineTablesStore.markDropped(this.deps.pool, this.deps.pipelineId, name, reason);
      this.names.add(name);
      this.deps.logger.warn(
        { table: name, reason },
        'a table of the pipeline is gone from the source; the others keep streaming',
      );
    }
    this.showWarning();
  }

  /** The tables are replicated again (a backfill of a table created again). */
  restore(tables: readonly string[]): void {
    for (const table of tables) this.names.delete(table);
    this.showWarning();
  }

  private showWarning(): void {
    const names = [...this.names].sort();
    this.deps.stats.warn(
      'tables',
      names.length === 0
        ? null
        : `${names.join(', ')} ${names.length === 1 ? 'is' : 'are'} gone from the source (dropped or renamed ` +
            "there) and no longer replicated; the sink's copy is kept. Remove " +
            `${names.length === 1 ? 'it' : 'them'} from the pipeline, or backfill ` +
            `${names.length === 1 ? 'it' : 'them'} once created again`,
    );
  }
}
