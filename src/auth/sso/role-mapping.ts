import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { validationFailed } from '../../errors/app-error.js';
import { DEFAULT_ORGANIZATION_ID, DEFAULT_PROJECT_ID } from '../../store/pool.js';
import { lockAdminSet } from '../last-admin-guard.js';
import type { Role, ScopeType } from '../roles.js';
import type { StoredRoleMapping, StoredRoleRule } from './provider-settings.js';

/** A role mapping as the API takes it: scopes by name. */
export interface RoleMappingInput {
  claim: string;
  rules: { value: string; role: Role; scope_type: ScopeType; scope?: string }[];
  default_role?: Role;
}

/** A role mapping as the API shows it: scopes by their current name (null once deleted). */
export interface RoleMappingView {
  claim: string;
  rules: { value: string; role: Role; scope_type: ScopeType; scope?: string | null }[];
  default_role?: Role;
}

export interface MappedBinding {
  role: Role;
  scopeType: ScopeType;
  scopeId: string;
}

/** The `source` of the bindings a provider's logins make; manual bindings are never touched. */
export const bindingSource = (providerName: string) => `sso:${providerName}`;

const IdRow = z.object({ id: z.string() });
const NamedRow = z.object({ id: z.string(), name: z.string() });

/**
 * Turns the API's role mapping into the stored one, checking that every scope it names exists
 * (422 naming the rule, e.g. `role_mapping.rules[0].scope`).
 */
export async function resolveRoleMapping(
  db: CommonQueryMethods,
  input: RoleMappingInput,
): Promise<StoredRoleMapping> {
  if (input.claim.trim() === '') throw validationFailed('role_mapping.claim', 'must not be empty');
  const rules: StoredRoleRule[] = [];
  for (const [index, rule] of input.rules.entries()) {
    const field = `role_mapping.rules[${index}].scope`;
    if (rule.scope_type === 'organization') {
      if (rule.scope !== undefined)
        throw validationFailed(field, 'must be omitted for scope_type organization');
      rules.push({
        value: rule.value,
        role: rule.role,
        scope_type: 'organization',
        scope_id: DEFAULT_ORGANIZATION_ID,
      });
      continue;
    }
    if (rule.scope === undefined)
      throw validationFailed(field, `is required for scope_type ${rule.scope_type}`);
    const table =
      rule.scope_type === 'project' ? sql.identifier(['projects']) : sql.identifier(['workspaces']);
    const id = await db.maybeOneFirst(sql.type(IdRow)`
      SELECT id FROM ${table} WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND name = ${rule.scope}`);
    if (id === null) throw validationFailed(field, `no ${rule.scope_type} is named '${rule.scope}'`);
    rules.push({ value: rule.value, role: rule.role, scope_type: rule.scope_type, scope_id: id });
  }
  return { claim: input.claim, rules, ...(input.default_role ? { default_role: input.default_role } : {}) };
}

/** The stored mapping with each scope's current name. */
export async function describeRoleMapping(
  db: CommonQueryMethods,
  mapping: StoredRoleMapping,
): Promise<RoleMappingView> {
  const ids = mapping.rules.filter((r) => r.scope_type !== 'organization').map((r) => r.scope_id);
  const names = new Map<string, string>();
  if (ids.length > 0) {
    const rows = await db.any(sql.type(NamedRow)`
      SELECT id, name FROM projects WHERE id = ANY(${sql.array(ids, 'uuid')})
      UNION ALL
      SELECT id, name FROM workspaces WHERE id = ANY(${sql.array(ids, 'uuid')})`);
    for (const row of rows) names.set(row.id, row.name);
  }
  return {
    claim: mapping.claim,
    rules: mapping.rules.map(({ value, role, scope_type, scope_id }) =>
      scope_type === 'organization'
        ? { value, role, scope_type }
        : { value, role, scope_type, scope: names.get(scope_id) ?? null },
    ),
    ...(mapping.default_role ? { default_role: mapping.default_role } : {}),
  };
}

/**
 * The values a claim carries, as strings: a string, a list of strings, or (for providers such as
 * Keycloak) a dotted path into nested claims, e.g. `realm_access.roles`.
 */
function claimValues(claims: Record<string, unknown>, claim: string): string[] {
  let value: unknown = claims[claim];
  if (value === undefined && claim.includes('.')) {
    value = claim
      .split('.')
      .reduce<unknown>(
        (node, key) =>
          node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined,
        claims,
      );
  }
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return list.filter((v): v is string | number => typeof v === 'string' || typeof v === 'number').map(String);
}

/** The bindings a login's claims map to: every matching rule, else the default role at the default project. */
export function mapBindings(
  mapping: StoredRoleMapping | undefined,
  claims: Record<string, unknown>,
): MappedBinding[] {
  if (!mapping) return [];
  const values = new Set(claimValues(claims, mapping.claim));
  const bindings = new Map<string, MappedBinding>();
  for (const rule of mapping.rules) {
    if (!values.has(rule.value)) continue;
    bindings.set(`${rule.role}/${rule.scope_type}/${rule.scope_id}`, {
      role: rule.role,
      scopeType: rule.scope_type,
      scopeId: rule.scope_id,
    });
  }
  if (bindings.size === 0 && mapping.default_role) {
    return [{ role: mapping.default_role, scopeType: 'project', scopeId: DEFAULT_PROJECT_ID }];
  }
  return [...bindings.values()];
}

/** Whether an enabled organization admin would remain if `source`'s bindings of the user went. */
function adminRemainsWithout(db: CommonQueryMethods, userId: string, source: string): Promise<boolean> {
  return db.exists(sql.unsafe`
    SELECT 1 FROM role_bindings b JOIN users u ON u.id = b.user_id
    WHERE b.role = 'admin' AND b.scope_type = 'organization' AND NOT u.disabled
      AND NOT (b.user_id = ${userId} AND b.source = ${source})`);
}

/**
 * Replaces the bindings this provider gave the user at earlier logins with the ones this login
 * maps to, so a group removed at the provider takes its role away at the next login. Manual
 * bindings stay as they are (one that equals a mapped binding is kept and not duplicated), and a
 * rule whose project or workspace was deleted since binds nothing.
 */
export async function replaceMappedBindings(
  db: CommonQueryMethods,
  userId: string,
  providerName: string,
  bindings: MappedBinding[],
): Promise<void> {
  const source = bindingSource(providerName);
  // A mapping never removes the last organization admin: with none left nobody could sign in and
  // bootstrap would open again to whoever comes first. Such a binding stays until another admin exists.
  await lockAdminSet(db);
  const keepsAdmin = bindings.some((b) => b.role === 'admin' && b.scopeType === 'organization');
  const lastAdmin = !keepsAdmin && !(await adminRemainsWithout(db, userId, source));
  await db.query(sql.unsafe`
    DELETE FROM role_bindings WHERE user_id = ${userId} AND source = ${source}
    ${lastAdmin ? sql.fragment`AND NOT (role = 'admin' AND scope_type = 'organization')` : sql.fragment``}`);
  for (const binding of bindings) {
    const scopeTable =
      binding.scopeType === 'organization'
        ? 'organizations'
        : binding.scopeType === 'project'
          ? 'projects'
          : 'workspaces';
    await db.query(sql.unsafe`
      INSERT INTO role_bindings (user_id, role, scope_type, scope_id, source)
      SELECT ${userId}, ${binding.role}, ${binding.scopeType}, ${binding.scopeId}, ${source}
      WHERE EXISTS (SELECT 1 FROM ${sql.identifier([scopeTable])} WHERE id = ${binding.scopeId})
      ON CONFLICT (user_id, role, scope_type, scope_id) DO NOTHING`);
  }
}
