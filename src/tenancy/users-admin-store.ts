import { type CommonQueryMethods, sql } from 'slonik';
import { UserRow } from '../auth/users-store.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

/** The fields an administrator may change on a user; absent ones are kept. */
export interface UserChanges {
  displayName?: string;
  disabled?: boolean;
  passwordHash?: string;
}

/** What the user administration needs beyond `auth/users-store.ts` (find, find by e-mail, insert). */
export const usersAdminStore = {
  list: (db: CommonQueryMethods) =>
    db.any(sql.type(UserRow)`
      SELECT * FROM users WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} ORDER BY lower(email), id`),

  /** The user, its row locked until the transaction ends. */
  lock: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(UserRow)`
      SELECT * FROM users WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND id = ${id} FOR UPDATE`),

  update: (db: CommonQueryMethods, id: string, changes: UserChanges) =>
    db.one(sql.type(UserRow)`
      UPDATE users SET
        display_name = coalesce(${changes.displayName ?? null}::text, display_name),
        disabled = coalesce(${changes.disabled ?? null}::boolean, disabled),
        password_hash = coalesce(${changes.passwordHash ?? null}::text, password_hash),
        updated_at = now()
      WHERE id = ${id} RETURNING *`),

  /** Deletes a user; its identities, role bindings, tokens and sessions go with it (cascade). */
  delete: (db: CommonQueryMethods, id: string) => db.query(sql.unsafe`DELETE FROM users WHERE id = ${id}`),
};
