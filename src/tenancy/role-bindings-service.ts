import {
  type CommonQueryMethods,
  type DatabasePool,
  ForeignKeyIntegrityConstraintViolationError,
  UniqueIntegrityConstraintViolationError,
} from 'slonik';
import { lockAdminSet, refuseRemovingLastAdmin } from '../auth/last-admin-guard.js';
import type { Role, ScopeType } from '../auth/roles.js';
import { findUser } from '../auth/users-store.js';
import type { RequestContext } from '../context.js';
import { AppError, notFound, validationFailed } from '../errors/app-error.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';
import { isRecordId } from '../store/record-id.js';
import { projectsStore } from './projects-store.js';
import { type RoleBindingFilter, type RoleBindingRow, roleBindingsStore } from './role-bindings-store.js';
import { listRoles, type RoleView } from './roles-catalog.js';
import { workspacesStore } from './workspaces-store.js';

export interface RoleBindingInput {
  user_id: string;
  role: Role;
  scope_type: ScopeType;
  /** The workspace's or project's id; for the organization, its id or nothing. */
  scope_id?: string;
  /** The workspace's or project's name, instead of `scope_id`. */
  scope?: string;
}

/** Role bindings of the organization's users, for organization admins. */
export class RoleBindingsService {
  constructor(private readonly pool: DatabasePool) {}

  async list(_ctx: RequestContext, filter: RoleBindingFilter): Promise<RoleBindingRow[]> {
    return [...(await roleBindingsStore.list(this.pool, filter))];
  }

  /** The roles a binding may name, weakest first, with what each may do. */
  roles(_ctx: RequestContext): Promise<RoleView[]> {
    return listRoles(this.pool);
  }

  async get(_ctx: RequestContext, id: string): Promise<RoleBindingRow> {
    const row = isRecordId(id) ? await roleBindingsStore.find(this.pool, id) : null;
    if (!row) throw notFound('role binding', id);
    return row;
  }

  /** Binds a role to a user at a scope. The same binding twice is refused (ALREADY_EXISTS). */
  async create(ctx: RequestContext, input: RoleBindingInput): Promise<RoleBindingRow> {
    const user = isRecordId(input.user_id) ? await findUser(this.pool, input.user_id) : null;
    if (!user || user.organization_id !== DEFAULT_ORGANIZATION_ID) {
      throw validationFailed('user_id', `no user has id '${input.user_id}'`);
    }
    const scopeId = await this.scopeId(this.pool, input);
    try {
      const id = await roleBindingsStore.insert(this.pool, {
        userId: user.id,
        role: input.role,
        scopeType: input.scope_type,
        scopeId,
      });
      return await this.get(ctx, id);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError(
          'ALREADY_EXISTS',
          `user '${user.email}' already holds role '${input.role}' at this ${input.scope_type} scope`,
        );
      }
      // The user was deleted between the lookup and the insert.
      if (error instanceof ForeignKeyIntegrityConstraintViolationError) {
        throw validationFailed('user_id', `no user has id '${input.user_id}'`);
      }
      throw error;
    }
  }

  /** Removes a binding; removing the last enabled organization admin's is refused (LAST_ADMIN). */
  async delete(_ctx: RequestContext, id: string): Promise<void> {
    if (!isRecordId(id)) throw notFound('role binding', id);
    await this.pool.transaction(async (tx) => {
      await lockAdminSet(tx);
      const binding = await roleBindingsStore.lock(tx, id);
      if (!binding) throw notFound('role binding', id);
      if (binding.role === 'admin' && binding.scope_type === 'organization') {
        await refuseRemovingLastAdmin(
          tx,
          binding.user_id,
          `remove the organization admin role of '${binding.user_email}'`,
        );
      }
      await roleBindingsStore.delete(tx, id);
    });
  }

  /**
   * The id of the scope a binding names: the organization's own (its id, if given, must be it);
   * a workspace's or project's by `scope_id` or by `scope`, its name, exactly one of them.
   */
  private async scopeId(db: CommonQueryMethods, input: RoleBindingInput): Promise<string> {
    const type = input.scope_type;
    if (type === 'organization') {
      if (input.scope !== undefined) {
        throw validationFailed('scope', 'names a workspace or project; the organization scope takes none');
      }
      if (input.scope_id !== undefined && input.scope_id !== DEFAULT_ORGANIZATION_ID) {
        throw validationFailed(
          'scope_id',
          `the organization scope is the organization's id (${DEFAULT_ORGANIZATION_ID}) or omitted`,
        );
      }
      return DEFAULT_ORGANIZATION_ID;
    }
    if (input.scope_id !== undefined && input.scope !== undefined) {
      throw validationFailed('scope', 'give scope_id or scope (a name), not both');
    }
    if (input.scope_id !== undefined) {
      const found = isRecordId(input.scope_id)
        ? await (type === 'workspace' ? workspacesStore : projectsStore).find(db, input.scope_id)
        : null;
      if (!found) throw validationFailed('scope_id', `no ${type} has id '${input.scope_id}'`);
      return found.id;
    }
    if (input.scope !== undefined) {
      const found = await (type === 'workspace' ? workspacesStore : projectsStore).findByName(
        db,
        input.scope,
      );
      if (!found) throw validationFailed('scope', `no ${type} is named '${input.scope}'`);
      return found.id;
    }
    throw validationFailed('scope_id', `is required for a ${type} scope (or give scope, its name)`);
  }
}
