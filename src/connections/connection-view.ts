import type { ConnectionRow } from '../store/connections-store.js';
import { maskDsn } from './dsn.js';

/** A connection as the API shows it: the DSN's password masked. */
export interface ConnectionView {
  id: string;
  project_id: string;
  name: string;
  type: string;
  dsn: string;
  created_at: string;
  updated_at: string;
}

export const toConnectionView = (row: ConnectionRow): ConnectionView => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  type: row.type,
  dsn: maskDsn(row.dsn, row.password_sealed !== null),
  created_at: row.created_at,
  updated_at: row.updated_at,
});
