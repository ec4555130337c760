import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { AppError, notFound } from '../errors/app-error.js';
import { isRecordId } from '../store/record-id.js';
import { resolveStanding } from './role-resolution.js';
import { ROLES, type Role, roleRank } from './roles.js';
import { findUser } from './users-store.js';

const ProjectRole = z.object({ id: z.string(), name: z.string(), role: z.enum(ROLES) });

/** Every project a user holds a role in (through any scope), with the strongest role, by name. */
async function projectsOf(db: CommonQueryMethods, userId: string) {
  const rows = await db.any(sql.type(ProjectRole)`
    SELECT p.id, p.name, b.role
    FROM projects p JOIN role_bindings b
      ON (b.scope_type = 'project' AND b.scope_id = p.id)
      OR (b.scope_type = 'workspace' AND b.scope_id = p.workspace_id)
      OR (b.scope_type = 'organization' AND b.scope_id = p.organization_id)
    WHERE b.user_id = ${userId}
    ORDER BY p.name`);
  const strongest = new Map<string, { id: string; name: string; role: Role }>();
  for (const row of rows) {
    const held = strongest.get(row.id);
    if (!held || roleRank(row.role) > roleRank(held.role)) strongest.set(row.id, row);
  }
  return [...strongest.values()];
}

async function projectName(db: CommonQueryMethods, id: string): Promise<string> {
  return db.oneFirst(sql.type(z.object({ name: z.string() }))`SELECT name FROM projects WHERE id = ${id}`);
}

/**
 * The project a user names (by name or id) to act in: one it holds a role in. Another project is
 * answered as unknown, so names of projects one may not see stay hidden.
 */
export async function projectForUser(
  db: CommonQueryMethods,
  userId: string,
  nameOrId: string,
): Promise<string> {
  const byId = isRecordId(nameOrId);
  const match = (await projectsOf(db, userId)).find((p) =>
    byId ? p.id === nameOrId.toLowerCase() : p.name === nameOrId,
  );
  if (!match) throw notFound('project', nameOrId);
  return match.id;
}

/** What `GET /v1/auth/session` shows: the user, how it signed in, the active project and its role there. */
export async function describeCaller(
  db: CommonQueryMethods,
  caller: { userId: string; via: 'session' | 'token'; projectId: string; role?: Role | undefined },
) {
  const user = await findUser(db, caller.userId);
  if (!user) throw new AppError('UNAUTHENTICATED', 'the user no longer exists');
  const standing = await resolveStanding(db, user.id, caller.projectId);
  const role = caller.via === 'token' ? caller.role : standing.role;
  return {
    user: { id: user.id, email: user.email, display_name: user.display_name },
    via: caller.via,
    project: { id: caller.projectId, name: await projectName(db, caller.projectId) },
    role: role ?? null,
    organization_admin: standing.organizationAdmin && (caller.via === 'session' || role === 'admin'),
    projects: await projectsOf(db, user.id),
  };
}
