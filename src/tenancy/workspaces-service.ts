import { type DatabasePool, UniqueIntegrityConstraintViolationError } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, notFound } from '../errors/app-error.js';
import { DEFAULT_WORKSPACE_ID } from '../store/pool.js';
import { isRecordId } from '../store/record-id.js';
import { projectsStore } from './projects-store.js';
import { type WorkspaceRow, workspacesStore } from './workspaces-store.js';

const alreadyExists = (name: string) => new AppError('ALREADY_EXISTS', `workspace '${name}' already exists`);

/** Workspaces of the one organization, for organization admins. */
export class WorkspacesService {
  constructor(private readonly pool: DatabasePool) {}

  async list(_ctx: RequestContext): Promise<WorkspaceRow[]> {
    return [...(await workspacesStore.list(this.pool))];
  }

  async get(_ctx: RequestContext, id: string): Promise<WorkspaceRow> {
    const row = isRecordId(id) ? await workspacesStore.find(this.pool, id) : null;
    if (!row) throw notFound('workspace', id);
    return row;
  }

  async create(ctx: RequestContext, name: string): Promise<WorkspaceRow> {
    try {
      const { id } = await workspacesStore.insert(this.pool, name);
      return await this.get(ctx, id);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) throw alreadyExists(name);
      throw error;
    }
  }

  /** Renames a workspace; its id, projects and role bindings stay. */
  async rename(ctx: RequestContext, id: string, name: string): Promise<WorkspaceRow> {
    if (!isRecordId(id)) throw notFound('workspace', id);
    try {
      const result = await workspacesStore.rename(this.pool, id, name);
      if (result.rowCount === 0) throw notFound('workspace', id);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) throw alreadyExists(name);
      throw error;
    }
    return this.get(ctx, id);
  }

  /**
   * Deletes an empty workspace and the role bindings scoped to it. One that holds projects is
   * refused (WORKSPACE_IN_USE), and so is the default one, where new projects go by default.
   */
  async delete(_ctx: RequestContext, id: string): Promise<void> {
    if (!isRecordId(id)) throw notFound('workspace', id);
    await this.pool.transaction(async (tx) => {
      const locked = await workspacesStore.lock(tx, id);
      if (!locked) throw notFound('workspace', id);
      if (id === DEFAULT_WORKSPACE_ID) {
        throw new AppError(
          'DEFAULT_NOT_DELETABLE',
          `workspace '${locked.name}' is the default workspace, where projects go when none is named; it can be renamed but not deleted`,
        );
      }
      const projects = await projectsStore.namesIn(tx, id);
      if (projects.length > 0) {
        throw new AppError(
          'WORKSPACE_IN_USE',
          `workspace '${locked.name}' holds project${projects.length > 1 ? 's' : ''} ${projects
            .map((n) => `'${n}'`)
            .join(', ')}; move them to another workspace or delete them first`,
          { projects },
        );
      }
      await workspacesStore.delete(tx, id);
    });
  }
}
