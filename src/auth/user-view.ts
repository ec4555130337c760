import type { UserRow } from './users-store.js';

/** A user as the API shows it: the password hash never leaves the service, only whether one is set. */
export interface UserView {
  id: string;
  email: string;
  display_name: string;
  disabled: boolean;
  /** False for a user who signs in only through SSO. */
  password_set: boolean;
  created_at: string;
  updated_at: string;
}

export const toUserView = (row: UserRow): UserView => ({
  id: row.id,
  email: row.email,
  display_name: row.display_name,
  disabled: row.disabled,
  password_set: row.password_hash !== null,
  created_at: row.created_at,
  updated_at: row.updated_at,
});
