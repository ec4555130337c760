import type { TableVerdict } from '../core/verdict.js';
import type { VerificationRow } from '../store/verifications-store.js';

/** A verification as the API, the live feed and the CLI show it. */
export interface VerificationView {
  id: string;
  pipeline: string;
  status: VerificationRow['status'];
  /** The worst of the tables' verdicts, once completed. */
  result: VerificationRow['result'];
  /** `request`, `schedule`, or `repair` (the verification that checks a repair). */
  trigger: VerificationRow['trigger'];
  /** The tables asked for; empty for every table of the pipeline. */
  tables_requested: string[];
  tables: TableVerdict[];
  rows_read: number;
  source_share: number;
  error: string | null;
  repair: {
    status: NonNullable<VerificationRow['repair_status']>;
    error: string | null;
    verification_id: string | null;
  } | null;
  /** For a verification checking a repair: the verification repaired. */
  repair_of: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
}

export function toVerificationView(row: VerificationRow, pipeline: string): VerificationView {
  const duration =
    row.started_at && row.finished_at ? Date.parse(row.finished_at) - Date.parse(row.started_at) : null;
  return {
    id: row.id,
    pipeline,
    status: row.status,
    result: row.result,
    trigger: row.trigger,
    tables_requested: row.tables_requested,
    tables: row.tables as unknown as TableVerdict[],
    rows_read: row.rows_read,
    source_share: row.source_share,
    error: row.error,
    repair: row.repair_status
      ? { status: row.repair_status, error: row.repair_error, verification_id: row.repaired_by }
      : null,
    repair_of: row.repair_of,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    duration_ms: duration,
  };
}
