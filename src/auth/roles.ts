/** The roles, weakest first: each role may do everything the one before it may. */
export const ROLES = ['viewer', 'operator', 'editor', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const SCOPE_TYPES = ['organization', 'workspace', 'project'] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];

export const roleRank = (role: Role): number => ROLES.indexOf(role) + 1;

/** The stronger of two roles; `undefined` stands for no role at all. */
export function strongerRole(a: Role | undefined, b: Role | undefined): Role | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return roleRank(a) >= roleRank(b) ? a : b;
}

/** The weaker of two roles: a token's own role caps its user's. */
export function weakerRole(a: Role | undefined, b: Role | undefined): Role | undefined {
  if (a === undefined || b === undefined) return undefined;
  return roleRank(a) <= roleRank(b) ? a : b;
}

/**
 * What a route requires, declared on every `/v1/` route (`config.permission`):
 * - `public`: nothing (bootstrap, login, SSO);
 * - `authenticated`: any signed-in caller, whatever its roles (who am I, my own tokens);
 * - `read` / `operate` / `edit` / `manage`: at least viewer / operator / editor / admin in the
 *   active project;
 * - `organization`: admin bound at organization scope (users, workspaces, projects, role
 *   bindings, SSO providers, the audit trail);
 * - `metrics`: `/metrics`, organization-wide figures: the metrics token, or an organization admin.
 */
const PERMISSIONS = [
  'public',
  'authenticated',
  'read',
  'operate',
  'edit',
  'manage',
  'organization',
  'metrics',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The least role in the active project that a project permission needs. */
export const PROJECT_PERMISSION_ROLE: Record<'read' | 'operate' | 'edit' | 'manage', Role> = {
  read: 'viewer',
  operate: 'operator',
  edit: 'editor',
  manage: 'admin',
};
