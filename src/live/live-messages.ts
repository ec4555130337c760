/**
 * The messages of the live feed at `/v1/live` (a WebSocket), one discriminated union. The
 * dashboard imports these types; the server is the only sender.
 */

import type { VerificationView } from '../verify/verification-view.js';

/** Copy progress of one table, as in GET /v1/pipelines/{name}/progress. */
export interface LiveTableProgress {
  table: string;
  partitions_total: number;
  partitions_done: number;
  rows_total: number;
  rows_done: number;
  percent: number;
  eta_seconds: number | null;
}

/**
 * A pipeline's messages carry `project_id` on a feed of every project (authentication off), where
 * two projects may hold the same name.
 */
export type LiveMessage =
  /** Sent once on connect. */
  | { type: 'hello'; version: string }
  /** A pipeline changed state (or its error changed). */
  | { type: 'pipeline.state'; name: string; project_id?: string; state: string; error: string | null }
  /**
   * A schema change waits for review (`pending`; read it at `/schema/proposed`), or was decided
   * (`decided`, with the proposal's id).
   */
  | {
      type: 'pipeline.schema';
      name: string;
      project_id?: string;
      proposal_id: string | null;
      status: 'pending' | 'decided';
    }
  /** A verification of the pipeline started, finished a table, ended, or its repair moved on. */
  | { type: 'pipeline.verification'; name: string; project_id?: string; verification: VerificationView }
  /** Every second, for each pipeline this instance runs. */
  | {
      type: 'pipeline.stats';
      name: string;
      project_id?: string;
      state: string;
      phase: 'idle' | 'snapshot' | 'streaming';
      events_per_second: number;
      replication_lag_ms: number;
      /** Source WAL after what the sink holds durably; null when not measured. */
      replication_lag_bytes: number | null;
      /** WAL the source keeps for the slot; null when not measured. */
      retained_wal_bytes: number | null;
      last_checkpoint_at: string | null;
      /** Tables being copied right now. */
      copying: LiveTableProgress[];
      /** Rows copied a second since the previous message, a copy that ended meanwhile included. */
      copy_rows_per_second: number;
    };
