import type { TableRef } from '../core/change.js';
import { AppError } from '../errors/app-error.js';

/** What happened to one sink table behind the pipeline's back. */
export interface SinkTableChange {
  /** The source table whose copy the sink table holds. */
  table: TableRef;
  /** The sink table. */
  target: TableRef;
  /** What is wrong with it, e.g. `does not exist any more`. */
  problem: string;
}

const nameOf = (ref: TableRef) => `${ref.schema}.${ref.table}`;

/**
 * A sink table whose copy was done was dropped, lost columns or was emptied outside the pipeline.
 * Not retried, and never recreated empty: only a new copy of the table (a backfill) brings it back,
 * so the message names each table and the exact call that copies it again.
 */
export class SinkTableChangedError extends AppError {
  constructor(
    readonly pipeline: string,
    readonly changes: readonly SinkTableChange[],
  ) {
    const tables = changes.map((c) => nameOf(c.table));
    const each = changes
      .map((c) => `sink table ${nameOf(c.target)} (the copy of ${nameOf(c.table)}) ${c.problem}`)
      .join('; ');
    super(
      'SINK_TABLE_CHANGED',
      `SINK_TABLE_CHANGED: ${each}. It was changed outside the pipeline, which does not recreate it empty: ` +
        `copy ${tables.length > 1 ? 'them' : 'it'} again from the source with ` +
        `\`replicator backfill ${pipeline} ${tables.join(' ')}\`, or POST /v1/pipelines/${pipeline}/backfill ` +
        `with ${JSON.stringify({ tables })}, or "Copy again" on the dashboard's pipeline page`,
      { tables },
    );
    this.name = 'SinkTableChangedError';
  }
}
