import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { ROLES, SCOPE_TYPES } from '../auth/roles.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

/** A binding as the API shows it: the user's e-mail and the scope's name beside their ids. */
export const RoleBindingRow = z.object({
  id: z.string(),
  user_id: z.string(),
  user_email: z.string(),
  role: z.enum(ROLES),
  scope_type: z.enum(SCOPE_TYPES),
  scope_id: z.string(),
  /** Null when the workspace or project is gone (a binding an SSO mapping made, say). */
  scope_name: z.string().nullable(),
  source: z.string(),
  created_at: z.string(),
});
export type RoleBindingRow = z.infer<typeof RoleBindingRow>;

/** Filters of a listing; each one given narrows it. */
export interface RoleBindingFilter {
  userId?: string;
  scopeType?: string;
  scopeId?: string;
}

const SELECT = sql.fragment`
  SELECT b.id, b.user_id, u.email AS user_email, b.role, b.scope_type, b.scope_id,
    CASE b.scope_type WHEN 'organization' THEN o.name WHEN 'workspace' THEN w.name ELSE p.name END AS scope_name,
    b.source, b.created_at
  FROM role_bindings b
    JOIN users u ON u.id = b.user_id
    LEFT JOIN organizations o ON b.scope_type = 'organization' AND o.id = b.scope_id
    LEFT JOIN workspaces w ON b.scope_type = 'workspace' AND w.id = b.scope_id
    LEFT JOIN projects p ON b.scope_type = 'project' AND p.id = b.scope_id
  WHERE u.organization_id = ${DEFAULT_ORGANIZATION_ID}`;

export const roleBindingsStore = {
  list: (db: CommonQueryMethods, filter: RoleBindingFilter) => {
    const conditions = [
      filter.userId === undefined ? undefined : sql.fragment`b.user_id = ${filter.userId}`,
      filter.scopeType === undefined ? undefined : sql.fragment`b.scope_type = ${filter.scopeType}`,
      filter.scopeId === undefined ? undefined : sql.fragment`b.scope_id = ${filter.scopeId}`,
    ].filter((c) => c !== undefined);
    return db.any(sql.type(RoleBindingRow)`${SELECT}
      ${conditions.length > 0 ? sql.fragment`AND ${sql.join(conditions, sql.fragment` AND `)}` : sql.fragment``}
      ORDER BY lower(u.email), b.scope_type, scope_name, b.role`);
  },

  find: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(RoleBindingRow)`${SELECT} AND b.id = ${id}`),

  /** Locks the binding's row until the transaction ends. */
  lock: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(RoleBindingRow)`${SELECT} AND b.id = ${id} FOR UPDATE OF b`),

  /** Inserts a binding an administrator made (`source` manual). */
  insert: (db: CommonQueryMethods, b: { userId: string; role: string; scopeType: string; scopeId: string }) =>
    db.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO role_bindings (user_id, role, scope_type, scope_id, source)
      VALUES (${b.userId}, ${b.role}, ${b.scopeType}, ${b.scopeId}, 'manual') RETURNING id`),

  delete: (db: CommonQueryMethods, id: string) =>
    db.query(sql.unsafe`DELETE FROM role_bindings WHERE id = ${id}`),
};
