import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { ROLES, type Role, strongerRole } from './roles.js';

const BindingRow = z.object({ role: z.enum(ROLES), scope_type: z.string() });

/** A user's standing: the strongest role it holds over a project, and whether it is an organization admin. */
export interface Standing {
  role: Role | undefined;
  organizationAdmin: boolean;
}

/**
 * Resolves a user's role in a project from its bindings at the project, at the project's workspace
 * and at the organization: the strongest applies.
 */
export async function resolveStanding(
  db: CommonQueryMethods,
  userId: string,
  projectId: string,
): Promise<Standing> {
  const rows = await db.any(sql.type(BindingRow)`
    SELECT b.role, b.scope_type
    FROM role_bindings b, projects p
    WHERE b.user_id = ${userId} AND p.id = ${projectId}
      AND ((b.scope_type = 'project' AND b.scope_id = p.id)
        OR (b.scope_type = 'workspace' AND b.scope_id = p.workspace_id)
        OR (b.scope_type = 'organization' AND b.scope_id = p.organization_id))`);
  let role: Role | undefined;
  for (const row of rows) role = strongerRole(role, row.role);
  const organizationAdmin = rows.some((row) => row.scope_type === 'organization' && row.role === 'admin');
  return { role, organizationAdmin };
}

/**
 * The project a session starts in: the default project when the user has a role there, else the
 * first project (by name) where it has one, else the default project (where it may do nothing).
 */
export async function defaultProjectFor(
  db: CommonQueryMethods,
  userId: string,
  fallback: string,
): Promise<string> {
  const id = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT p.id
    FROM projects p JOIN role_bindings b
      ON (b.scope_type = 'project' AND b.scope_id = p.id)
      OR (b.scope_type = 'workspace' AND b.scope_id = p.workspace_id)
      OR (b.scope_type = 'organization' AND b.scope_id = p.organization_id)
    WHERE b.user_id = ${userId}
    ORDER BY p.id = ${fallback} DESC, p.name
    LIMIT 1`);
  return id ?? fallback;
}
