import type { DatabasePool } from 'slonik';
import type { Phase, PipelineAction, PipelineState } from '../../machines/pipeline.js';
import type { RequestContext } from '../context.js';
import { badRequest } from '../errors/app-error.js';
import { pipelineHistoryStore } from '../store/pipeline-history-store.js';
import { pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { runsStore } from '../store/runs-store.js';
import { snapshotPartitionsStore } from '../store/snapshot-partitions-store.js';
import { HISTORY_RESOLUTION_S, historyResolutionS } from './history-resolution.js';
import { currentOf, type PipelineLiveStats, toPipelineView } from './pipeline-view.js';
import { requirePipeline } from './require-pipeline.js';
import { etaSeconds, percentOf, type TableProgress } from './table-progress.js';

/** What the data plane of a pipeline running in this process measured, as far as these endpoints read it. */
export interface PipelineFigures {
  readonly phase: Phase | 'idle';
  readonly tables: ReadonlyMap<string, TableProgress>;
  /** Counts not yet handed to the store, to add to the stored totals. */
  unsaved(): { events: number; sinkErrors: number };
}

/** What the running side of pipelines asks of the runtime that runs them. */
export interface PipelineControl {
  /** Applies a user's action; throws when the pipeline's state does not allow it. Resolves to the state it led to. */
  requestAction(ctx: RequestContext, name: string, action: PipelineAction): Promise<PipelineState>;
  /** Copies tables of a pipeline again, now or at its next start. */
  requestBackfill(
    ctx: RequestContext,
    name: string,
    tables: readonly string[],
  ): Promise<{ name: string; tables: string[]; state: string }>;
  /** Resyncs a stopped or failed pipeline: a new slot, every table copied again; it starts at once. */
  requestResync(
    ctx: RequestContext,
    name: string,
  ): Promise<{ name: string; tables: string[]; state: PipelineState }>;
  /** Live figures of a pipeline; idle when it does not run in this process. */
  stats(pipelineId: string): PipelineLiveStats;
  /** The measured figures of a pipeline running in this process. */
  statsOf(pipelineId: string): PipelineFigures | undefined;
}

/** The running side of pipelines: state changes, metrics, snapshot progress and run history. */
export class PipelineStatusService {
  constructor(
    private readonly pool: DatabasePool,
    private readonly control: PipelineControl,
  ) {}

  async changeState(ctx: RequestContext, name: string, action: PipelineAction) {
    const state = await this.control.requestAction(ctx, name, action);
    const row = await requirePipeline(this.pool, ctx, name);
    return { ...toPipelineView(row, this.control.stats(row.id)), state };
  }

  backfill(ctx: RequestContext, name: string, tables: readonly string[]) {
    return this.control.requestBackfill(ctx, name, tables);
  }

  resync(ctx: RequestContext, name: string) {
    return this.control.requestResync(ctx, name);
  }

  async metrics(ctx: RequestContext, name: string) {
    const row = await requirePipeline(this.pool, ctx, name);
    const live = this.control.stats(row.id);
    const unsaved = this.control.statsOf(row.id)?.unsaved() ?? { events: 0, sinkErrors: 0 };
    const current = currentOf(row, live);
    return {
      name: row.name,
      state: current.state,
      events_per_second: live.eventsPerSecond,
      replication_lag_seconds: live.replicationLagMs / 1000,
      replication_lag_bytes: live.replicationLagBytes,
      retained_wal_bytes: live.retainedWalBytes,
      last_checkpoint_at: current.lastCheckpointAt,
      events_total: row.events_total + unsaved.events,
      sink_errors_total: row.sink_errors_total + unsaved.sinkErrors,
    };
  }

  /**
   * The pipeline's figures over the last `windowMs`, oldest first: a point every 10 s it ran, or
   * over a long window a point every few of those (at most HISTORY_MAX_POINTS in all).
   */
  async history(ctx: RequestContext, name: string, windowMs: number) {
    const row = await requirePipeline(this.pool, ctx, name);
    const resolution = historyResolutionS(windowMs);
    const since = new Date(Date.now() - windowMs);
    // Each point as written, or merged: points are written about 10 s apart, not on whole 10 s.
    const points =
      resolution === HISTORY_RESOLUTION_S
        ? await pipelineHistoryStore.since(this.pool, row.id, since)
        : await pipelineHistoryStore.merged(this.pool, row.id, since, resolution);
    return { resolution_seconds: resolution, points: [...points] };
  }

  async progress(ctx: RequestContext, name: string) {
    const row = await requirePipeline(this.pool, ctx, name);
    const stats = this.control.statsOf(row.id);
    const stored = await pipelineTablesStore.list(this.pool, row.id);
    const plans = await snapshotPartitionsStore.list(this.pool, row.id);
    const tables = row.source_tables.map((table) => {
      const saved = stored.find((t) => t.table_name === table);
      // A sink table that no longer holds the copy is shown so, never with its old copy's 100 %.
      const sinkChanged = saved?.sink_changed ?? null;
      if (sinkChanged !== null) return sinkChangedProgress(table, sinkChanged);
      const status = saved?.status ?? 'pending';
      const copying = status === 'snapshot' || status === 'backfill';
      const live = copying ? stats?.tables.get(table) : undefined;
      const rowsTotal = live?.rowsTotal ?? saved?.rows_total ?? 0;
      const rowsDone = live?.rowsDone ?? saved?.rows_done ?? 0;
      return {
        table,
        status,
        partitions_total: live?.partitionsTotal ?? saved?.partitions_total ?? 0,
        partitions_done: live?.partitionsDone ?? saved?.partitions_done ?? 0,
        rows_total: Math.max(rowsTotal, rowsDone),
        rows_done: rowsDone,
        percent: percentOf(rowsDone, rowsTotal, status === 'streaming'),
        eta_seconds: live ? etaSeconds(live) : null,
        reason: status === 'dropped' ? (saved?.dropped_reason ?? null) : null,
        dropped_at: status === 'dropped' ? (saved?.dropped_at ?? null) : null,
        partitions: plans
          .filter((p) => p.table_name === table)
          .map((p) => {
            const current = live?.partitions?.get(p.partition_id);
            const done = p.done_at !== null || current?.status === 'done';
            return {
              partition: p.partition_id,
              lower_bound: p.lower_bound,
              upper_bound: p.upper_bound,
              status: done ? 'done' : current ? 'copying' : 'pending',
              rows_done: current?.rows ?? p.rows_done ?? 0,
            };
          }),
      };
    });
    return { phase: stats && stats.phase !== 'idle' ? stats.phase : 'idle', tables };
  }

  async runs(ctx: RequestContext, name: string, limit: number, cursor: string | undefined) {
    const row = await requirePipeline(this.pool, ctx, name);
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    const rows = await runsStore.page(this.pool, row.id, limit + 1, before);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      runs: page.map((r) => ({
        id: r.id,
        project_id: r.project_id,
        started_at: r.started_at,
        ended_at: r.ended_at,
        duration_ms: r.duration_ms,
        events_total: r.events_total,
        outcome: r.outcome ?? 'running',
        error: r.error,
      })),
      next_cursor: rows.length > limit && last ? encodeCursor(last.started_at, last.id) : null,
    };
  }
}

const encodeCursor = (startedAt: string, id: string) =>
  Buffer.from(`${startedAt}|${id}`).toString('base64url');

function decodeCursor(cursor: string): { startedAt: string; id: string } {
  const [startedAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!startedAt || !id || Number.isNaN(Date.parse(startedAt)) || !/^[0-9a-f-]{36}$/.test(id)) {
    throw badRequest('cursor', 'is not a cursor returned by this endpoint');
  }
  return { startedAt, id };
}

/** A table whose sink table changed behind the pipeline: nothing of its copy counts until it is copied again. */
const sinkChangedProgress = (table: string, problem: string) => ({
  table,
  status: 'sink_changed' as const,
  partitions_total: 0,
  partitions_done: 0,
  rows_total: 0,
  rows_done: 0,
  percent: 0,
  eta_seconds: null,
  reason: problem,
  dropped_at: null,
  partitions: [],
});
