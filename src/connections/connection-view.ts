import type { ConnectionRow } from '../store/connections-store.js';
import type { OrphanedSlotRow } from '../store/orphaned-slots-store.js';
import { maskDsn, PASSWORD_MASK } from './dsn.js';
import type { TlsField } from './tls-material.js';

/** A connection as the API shows it: every secret masked. */
export interface ConnectionView {
  id: string;
  project_id: string;
  name: string;
  type: string;
  dsn: string;
  /** The TLS material that is set, each shown as the mask. */
  tls: Partial<Record<TlsField, typeof PASSWORD_MASK>>;
  created_at: string;
  updated_at: string;
  /** Replication slots forced pipeline deletes left on this source, until they are dropped. */
  orphaned_slots: OrphanedSlotView[];
  /** The pipelines that name it, as their source or their sink. */
  used_by: ConnectionUserView[];
}

export interface ConnectionUserView {
  pipeline: string;
  state: string;
  as: 'source' | 'sink';
}

/** A pipeline that names connections, as the store lists it. */
export interface ConnectionUserRow {
  name: string;
  state: string;
  source_connection: string;
  sink_connection: string;
}

const usesOf = (name: string, users: readonly ConnectionUserRow[]): ConnectionUserView[] =>
  users.flatMap((p) => [
    ...(p.source_connection === name ? [{ pipeline: p.name, state: p.state, as: 'source' as const }] : []),
    ...(p.sink_connection === name ? [{ pipeline: p.name, state: p.state, as: 'sink' as const }] : []),
  ]);

export interface OrphanedSlotView {
  slot: string;
  pipeline: string;
  reason: string;
  drop_statement: string;
  since: string;
}

const toOrphanedSlotView = (row: OrphanedSlotRow): OrphanedSlotView => ({
  slot: row.slot_name,
  pipeline: row.pipeline_name,
  reason: row.reason,
  drop_statement: row.drop_statement,
  since: row.created_at,
});

export const toConnectionView = (
  row: ConnectionRow,
  orphans: readonly OrphanedSlotRow[],
  users: readonly ConnectionUserRow[] = [],
): ConnectionView => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  type: row.type,
  dsn: maskDsn(row.dsn, {
    password: row.password_sealed !== null,
    sslpassword: row.secret_names.includes('sslpassword'),
  }),
  tls: Object.fromEntries(
    row.secret_names.filter((n) => n.startsWith('tls.')).map((n) => [n.slice(4) as TlsField, PASSWORD_MASK]),
  ),
  created_at: row.created_at,
  updated_at: row.updated_at,
  orphaned_slots: orphans.filter((o) => o.connection_name === row.name).map(toOrphanedSlotView),
  used_by: usesOf(row.name, users),
});
