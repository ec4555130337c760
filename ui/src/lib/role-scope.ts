/**
 * Which role bindings give a role in a project: one bound at the organization, at the project's
 * workspace, or at the project itself (a role bound at a scope applies in every project inside it).
 */
import type { Project, RoleBinding } from './access-types';

export function bindingsInProject(bindings: RoleBinding[], project: Project): RoleBinding[] {
  return bindings.filter(
    (binding) =>
      binding.scope_type === 'organization' ||
      (binding.scope_type === 'workspace' && binding.scope_id === project.workspace_id) ||
      (binding.scope_type === 'project' && binding.scope_id === project.id),
  );
}

/** "admin of the organization", "editor of workspace main", "viewer of this project". */
export function scopeWords(binding: RoleBinding, project: Project): string {
  if (binding.scope_type === 'organization') return 'whole organization';
  if (binding.scope_type === 'workspace') return `workspace ${binding.scope_name ?? project.workspace}`;
  return 'this project';
}

/** The service's roles, weakest first (src/auth/roles.ts): each may do what the ones before it may. */
export const ROLES = ['viewer', 'operator', 'editor', 'admin'] as const;

/** The roles up to and including `role`: what a token made by a holder of `role` may be capped at. */
export function rolesUpTo(role: string | null): string[] {
  const index = (ROLES as readonly string[]).indexOf(role ?? '');
  return index < 0 ? [] : ROLES.slice(0, index + 1);
}
