import type { PipelineState } from '../../machines/pipeline.js';
import { DEFAULT_SOURCE_SHARE } from '../core/verdict.js';
import type { PipelineRow } from '../store/pipelines-store.js';
import { resolveSnapshotOptions, type SnapshotOptions } from './snapshot-options.js';

const snapshotJson = (o: SnapshotOptions) => ({
  parallelism: o.parallelism,
  partition_rows: o.partitionRows,
});

/** Live figures of a pipeline, as the runtime measures them. */
export interface PipelineLiveStats {
  eventsPerSecond: number;
  replicationLagMs: number;
  /** Source WAL after what the sink holds durably; null when not measured (stopped, source unread). */
  replicationLagBytes: number | null;
  /** WAL the source keeps for the pipeline's slot; null when not measured. */
  retainedWalBytes: number | null;
  /** Something a person should look at, e.g. the slot keeping too much WAL. */
  warning: string | null;
  /**
   * State, error and last checkpoint as the actor running here knows them, ahead of the stored
   * ones (written a moment later); absent when the pipeline does not run in this process.
   */
  current?: { state: PipelineState; error: string | null; lastCheckpointAt: string | null };
}

export const IDLE_STATS: PipelineLiveStats = {
  eventsPerSecond: 0,
  replicationLagMs: 0,
  replicationLagBytes: null,
  retainedWalBytes: null,
  warning: null,
};

/** State, error and last checkpoint: the running actor's when there is one here, else the stored ones. */
export const currentOf = (row: PipelineRow, stats: PipelineLiveStats) =>
  stats.current ?? {
    state: row.state as PipelineState,
    error: row.error,
    lastCheckpointAt: row.last_checkpoint_at,
  };

/** The list element of GET /v1/pipelines. */
export const toPipelineSummary = (row: PipelineRow, stats: PipelineLiveStats) => {
  const current = currentOf(row, stats);
  return {
    name: row.name,
    project_id: row.project_id,
    state: current.state,
    events_per_second: stats.eventsPerSecond,
    replication_lag_ms: stats.replicationLagMs,
    last_checkpoint_at: current.lastCheckpointAt,
  };
};

/** The full pipeline object: definition, state, live figures and timestamps. */
export const toPipelineView = (row: PipelineRow, stats: PipelineLiveStats) => {
  const current = currentOf(row, stats);
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    source: {
      connection: row.source_connection,
      tables: row.source_tables,
      ...(row.source_publication === null ? {} : { publication: row.source_publication }),
      slot: row.source_slot,
    },
    sink: { connection: row.sink_connection, properties: row.sink_properties },
    snapshot: snapshotJson(resolveSnapshotOptions(row.snapshot_options)),
    verify: {
      interval: row.verify_options.interval ?? null,
      source_share: row.verify_options.source_share ?? DEFAULT_SOURCE_SHARE,
    },
    schema_policy: row.schema_policy,
    state: current.state,
    desired_state: row.desired_state,
    error: current.error,
    warning: stats.warning,
    events_per_second: stats.eventsPerSecond,
    replication_lag_ms: stats.replicationLagMs,
    replication_lag_bytes: stats.replicationLagBytes,
    retained_wal_bytes: stats.retainedWalBytes,
    last_checkpoint_at: current.lastCheckpointAt,
    generation: row.generation,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
};
