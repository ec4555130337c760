import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

export const UserRow = z.object({
  id: z.string(),
  organization_id: z.string(),
  email: z.string(),
  display_name: z.string(),
  password_hash: z.string().nullable(),
  disabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type UserRow = z.infer<typeof UserRow>;

export function findUserByEmail(db: CommonQueryMethods, email: string): Promise<UserRow | null> {
  return db.maybeOne(sql.type(UserRow)`
    SELECT * FROM users WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND lower(email) = lower(${email})`);
}

export function findUser(db: CommonQueryMethods, id: string): Promise<UserRow | null> {
  return db.maybeOne(sql.type(UserRow)`SELECT * FROM users WHERE id = ${id}`);
}

export function insertUser(
  db: CommonQueryMethods,
  user: { email: string; displayName: string; passwordHash: string | null },
): Promise<UserRow> {
  return db.one(sql.type(UserRow)`
    INSERT INTO users (organization_id, email, display_name, password_hash)
    VALUES (${DEFAULT_ORGANIZATION_ID}, ${user.email}, ${user.displayName}, ${user.passwordHash})
    RETURNING *`);
}

/** Whether some enabled user holds admin at organization scope: the condition for signing in at all. */
export function organizationAdminExists(db: CommonQueryMethods): Promise<boolean> {
  return db.exists(sql.unsafe`
    SELECT 1 FROM role_bindings b JOIN users u ON u.id = b.user_id
    WHERE b.role = 'admin' AND b.scope_type = 'organization' AND NOT u.disabled`);
}
