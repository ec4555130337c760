import type { TableSchema } from '../../core/change.js';
import type { Sink } from '../../core/sink.js';
import type { PlannedPartition, SnapshotReader, SourceSnapshot } from '../../core/source.js';
import type { Logger } from '../../log/logger.js';
import type { PipelineStats } from '../pipeline-stats.js';
import type { CopyPace } from './copy-pace.js';
import { RowCounter } from './row-counter.js';

/** One table to copy, with its plan and what is already done. */
export interface TableSnapshotJob {
  table: TableSchema;
  /** `schema.table`, the key of progress. */
  name: string;
  partitions: PlannedPartition[];
  /** Partition ids the sink already holds. */
  done: Set<string>;
}

/** Where the runner reports durable progress (the metadata store). */
export interface SnapshotProgressSink {
  partitionDone(
    table: string,
    partitionId: string,
    rows: number,
    partitionsDone: number,
    rowsDone: number,
  ): Promise<void>;
  tableDone(table: string, rows: number): Promise<void>;
}

export interface SnapshotRunOptions {
  /** The snapshot every partition is read in. */
  snapshot: SourceSnapshot;
  jobs: TableSnapshotJob[];
  sink: Sink;
  stats: PipelineStats;
  progress: SnapshotProgressSink;
  parallelism: number;
  /** How the copy gives way to other work; none: it goes as fast as it can. */
  pace?: CopyPace;
  signal: AbortSignal;
  logger: Logger;
}

interface WorkItem {
  job: TableSnapshotJob;
  partition: PlannedPartition;
}

async function copyPartition(
  reader: SnapshotReader,
  item: WorkItem,
  sink: Sink,
  stats: PipelineStats,
  pace: CopyPace | undefined,
): Promise<number> {
  const progress = stats.tables.get(item.job.name);
  const partition = { status: 'copying' as 'copying' | 'done', rows: 0 };
  progress?.partitions?.set(item.partition.partitionId, partition);
  const format = sink.snapshotCopyFormat?.(item.job.table) ?? 'text';
  const counter = new RowCounter(
    format,
    (added) => {
      partition.rows += added;
      if (progress) progress.rowsDone += added;
    },
    pace,
  );
  const source = reader.copyPartition(item.job.table, item.partition, format);
  source.on('error', (error) => counter.destroy(error));
  source.pipe(counter);
  // The stream the sink reads is the runtime's: an error it emits before the sink listens is no
  // uncaught exception, and a write that fails ends it (the worker then closes its reader).
  counter.on('error', () => {});
  try {
    const rows = await sink.writeSnapshotPartition(
      item.job.table,
      { table: item.job.table, partitionId: item.partition.partitionId },
      counter,
      format,
    );
    partition.status = 'done';
    return rows;
  } catch (error) {
    counter.destroy();
    // The sink rolled the partition back: take its rows out of the live count again.
    if (progress) progress.rowsDone -= counter.rows;
    progress?.partitions?.delete(item.partition.partitionId);
    throw error;
  }
}

/**
 * Copies every partition not yet done, `parallelism` at a time, each worker reading in the same
 * snapshot. A partition is written and marked done by the sink atomically, so a crash loses at
 * most the partitions in flight, which are copied again on resume.
 */
export async function runSnapshot(options: SnapshotRunOptions): Promise<void> {
  const { jobs, stats, progress, signal } = options;
  const queue: WorkItem[] = [];
  const remaining = new Map<string, number>();
  for (const job of jobs) {
    const todo = job.partitions.filter((p) => !job.done.has(p.partitionId));
    remaining.set(job.name, todo.length);
    for (const partition of todo) queue.push({ job, partition });
  }
  /** Every partition of the table is in: the sink finishes it (its key, built once) before it streams. */
  const tableDone = async (job: TableSnapshotJob, rows: number) => {
    await options.sink.finishSnapshot(job.table);
    await progress.tableDone(job.name, rows);
  };
  for (const job of jobs) {
    if ((remaining.get(job.name) ?? 0) === 0) await tableDone(job, stats.tables.get(job.name)?.rowsDone ?? 0);
  }

  const worker = async () => {
    let reader: SnapshotReader | undefined;
    try {
      for (let item = queue.shift(); item && !signal.aborted; item = queue.shift()) {
        reader ??= await options.snapshot.openReader();
        const rows = await copyPartition(reader, item, options.sink, stats, options.pace);
        const table = stats.tables.get(item.job.name);
        if (table) table.partitionsDone++;
        stats.madeProgress();
        await progress.partitionDone(
          item.job.name,
          item.partition.partitionId,
          rows,
          table?.partitionsDone ?? 0,
          table?.rowsDone ?? rows,
        );
        const left = (remaining.get(item.job.name) ?? 1) - 1;
        remaining.set(item.job.name, left);
        if (left === 0) {
          await tableDone(item.job, table?.rowsDone ?? rows);
          options.logger.info({ table: item.job.name, rows: table?.rowsDone }, 'table snapshot done');
        }
      }
    } catch (error) {
      queue.length = 0; // the other workers finish their partition and stop
      throw error;
    } finally {
      await reader?.close();
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(options.parallelism, queue.length)) }, worker);
  const results = await Promise.allSettled(workers);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}
