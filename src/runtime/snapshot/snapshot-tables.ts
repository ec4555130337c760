import type { DatabasePool } from 'slonik';
import { type TableSchema, tableKey } from '../../core/change.js';
import type { Sink } from '../../core/sink.js';
import type { Source, SourceSnapshot } from '../../core/source.js';
import type { Logger } from '../../log/logger.js';
import type { SnapshotOptions } from '../../pipelines/snapshot-options.js';
import { pipelineTablesStore } from '../../store/pipeline-tables-store.js';
import { snapshotPartitionsStore } from '../../store/snapshot-partitions-store.js';
import type { PipelineStats } from '../pipeline-stats.js';
import type { CopyPace } from './copy-pace.js';
import { keyOrderOf } from './key-order.js';
import { runSnapshot, type SnapshotProgressSink, type TableSnapshotJob } from './snapshot-runner.js';

export interface SnapshotTablesOptions {
  pool: DatabasePool;
  pipelineId: string;
  projectId: string;
  source: Source;
  /** The slot's snapshot when the slot was just created; otherwise one is exported here. */
  slotSnapshot: SourceSnapshot | undefined;
  /** Copies every table afresh, as with a slot's snapshot: no partial copy of before is resumed. */
  copyAfresh?: boolean;
  tables: TableSchema[];
  sink: Sink;
  stats: PipelineStats;
  options: SnapshotOptions;
  /** How the copy gives way to other work (see SnapshotRunOptions). */
  pace?: CopyPace;
  signal: AbortSignal;
  logger: Logger;
}

/** Stores a finished partition and its table's progress in the metadata store. */
export const recordPartitionDone =
  (pool: DatabasePool, pipelineId: string): SnapshotProgressSink['partitionDone'] =>
  async (table, partitionId, rows, partitionsDone, rowsDone) => {
    await snapshotPartitionsStore.markDone(pool, pipelineId, table, partitionId, rows);
    await pipelineTablesStore.progress(pool, pipelineId, table, partitionsDone, rowsDone);
  };

/** Whether a change's key says which partition of the table holds its row. */
function keyRoutable(table: TableSchema): boolean {
  const key = table.columns.find((c) => c.name === table.keyColumns[0]);
  return table.keyColumns.length === 1 && key !== undefined && keyOrderOf(key.typeName) !== undefined;
}

/**
 * Copies the given tables into the sink: plans (or reloads the plan of) each table, skips the
 * partitions the sink already holds, and marks each table as streaming once it is complete.
 */
export async function snapshotTables(options: SnapshotTablesOptions): Promise<void> {
  const { pool, pipelineId, sink, stats, logger } = options;
  const exported = options.slotSnapshot ? undefined : await options.source.exportSnapshot();
  const snapshot = options.slotSnapshot ?? (exported as SourceSnapshot);
  try {
    const doneInSink = await sink.snapshotPartitionsDone();
    const planner = await snapshot.openReader();
    const jobs: TableSnapshotJob[] = [];
    try {
      for (const table of options.tables) {
        const name = tableKey(table);
        const done = new Set(
          doneInSink
            .filter((p) => p.table.schema === table.schema && p.table.table === table.table)
            .map((p) => p.partitionId),
        );
        const stored = await snapshotPartitionsStore.list(pool, pipelineId, name);
        let partitions = stored.map((p) => ({
          partitionId: p.partition_id,
          lower: p.lower_bound,
          upper: p.upper_bound,
        }));
        const row = (await pipelineTablesStore.list(pool, pipelineId)).find((t) => t.table_name === name);
        let rowsTotal = row?.rows_total ?? 0;
        // A backfill asked for and not yet begun copies afresh: the plan and markers of the table's
        // last copy are all done, and resuming them would copy nothing into a table that may be empty.
        const freshBackfill = row?.status === 'backfill' && row.snapshot_started_at === null;
        // A fresh slot invalidates any earlier partial copy (its stream starts later); otherwise resume
        // the stored plan when the sink holds some of it, and when the stream can tell the partitions
        // apart (their copies were made in different snapshots: see CopyGate).
        if (
          freshBackfill ||
          options.slotSnapshot !== undefined ||
          options.copyAfresh === true ||
          partitions.length === 0 ||
          done.size === 0 ||
          (done.size < partitions.length && !keyRoutable(table))
        ) {
          const plan = await planner.planPartitions(table, {
            targetRows: options.options.partitionRows,
            maxPartitions: 1024,
          });
          partitions = plan.partitions;
          rowsTotal = plan.rowsEstimate;
          await sink.resetTable(table);
          done.clear();
          await snapshotPartitionsStore.savePlan(pool, pipelineId, name, partitions);
        }
        await pipelineTablesStore.startSnapshot(pool, pipelineId, name, partitions.length, rowsTotal);
        const rowsDone = stored
          .filter((p) => done.has(p.partition_id))
          .reduce((sum, p) => sum + (p.rows_done ?? 0), 0);
        stats.copyStarted(name, {
          partitionsTotal: partitions.length,
          partitionsDone: done.size,
          rowsTotal,
          rowsDone,
          startedAtMs: Date.now(),
          rowsAtStart: rowsDone,
          partitions: new Map(),
        });
        const todo = partitions.filter((p) => !done.has(p.partitionId)).map((p) => p.partitionId);
        await snapshotPartitionsStore.stamp(pool, pipelineId, name, todo, snapshot.stamp);
        jobs.push({ table, name, partitions, done });
        logger.info({ table: name, partitions: partitions.length, resumed: done.size }, 'snapshot planned');
      }
    } finally {
      await planner.close();
    }
    await runSnapshot({
      snapshot,
      jobs,
      sink,
      stats,
      parallelism: options.options.parallelism,
      ...(options.pace ? { pace: options.pace } : {}),
      signal: options.signal,
      logger,
      progress: {
        partitionDone: recordPartitionDone(pool, pipelineId),
        tableDone: (table, rows) =>
          pipelineTablesStore.finishSnapshot(pool, pipelineId, table, rows).then(() => undefined),
      },
    });
  } finally {
    await exported?.release();
  }
}
