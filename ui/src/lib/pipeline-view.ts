/**
 * A pipeline as the pages show it: what the API answered, overlaid with what the live feed said
 * since (whichever is newer wins).
 */
import type { LivePipeline } from './pipeline-live.svelte';

export interface PipelineFigures {
  name: string;
  state: string;
  events_per_second: number;
  replication_lag_ms: number;
  /** Source WAL after what the sink holds; null when not measured (absent from the list). */
  replication_lag_bytes?: number | null;
  /** WAL the source keeps for the slot; null when not measured (absent from the list). */
  retained_wal_bytes?: number | null;
  last_checkpoint_at: string | null;
}

export function withLive<T extends PipelineFigures>(
  fetched: T,
  fetchedAt: number,
  live: LivePipeline | undefined,
): T & { phase: LivePipeline['phase'] | null; error?: string | null } {
  if (!live || live.at < fetchedAt) return { ...fetched, phase: live?.phase ?? null };
  const merged: T & { phase: LivePipeline['phase'] | null; error?: string | null } = {
    ...fetched,
    phase: live.phase ?? null,
  };
  if (live.state !== undefined) merged.state = live.state;
  if (live.events_per_second !== undefined) merged.events_per_second = live.events_per_second;
  if (live.replication_lag_ms !== undefined) merged.replication_lag_ms = live.replication_lag_ms;
  if (live.replication_lag_bytes !== undefined) merged.replication_lag_bytes = live.replication_lag_bytes;
  if (live.retained_wal_bytes !== undefined) merged.retained_wal_bytes = live.retained_wal_bytes;
  if (live.last_checkpoint_at !== undefined) merged.last_checkpoint_at = live.last_checkpoint_at;
  if (live.error !== undefined) merged.error = live.error;
  return merged;
}
