import {
  type CommonQueryMethods,
  type DatabasePool,
  ForeignKeyIntegrityConstraintViolationError,
  UniqueIntegrityConstraintViolationError,
} from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, badRequest, notFound, validationFailed } from '../errors/app-error.js';
import { DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID } from '../store/pool.js';
import { isRecordId } from '../store/record-id.js';
import { type ProjectRow, projectsStore } from './projects-store.js';
import { workspacesStore } from './workspaces-store.js';

export interface ProjectCreateInput {
  name: string;
  /** The workspace's name; absent: the default workspace. */
  workspace?: string;
}

export interface ProjectUpdateInput {
  name?: string;
  workspace?: string;
}

// Project names are unique in the organization (not only in their workspace): a name alone picks one.
const alreadyExists = (name: string) => new AppError('ALREADY_EXISTS', `project '${name}' already exists`);

/** Projects of the one organization, for organization admins. */
export class ProjectsService {
  constructor(private readonly pool: DatabasePool) {}

  /** The projects; with a workspace name, only that workspace's (an unknown one: 422). */
  /** An unknown `workspace` filter is an invalid query parameter: 400 BAD_REQUEST. */
  async list(_ctx: RequestContext, workspace?: string): Promise<ProjectRow[]> {
    let workspaceId: string | undefined;
    if (workspace !== undefined) {
      const row = await workspacesStore.findByName(this.pool, workspace);
      if (!row) throw badRequest('workspace', `no workspace is named '${workspace}'`);
      workspaceId = row.id;
    }
    return [...(await projectsStore.list(this.pool, workspaceId))];
  }

  async get(_ctx: RequestContext, id: string): Promise<ProjectRow> {
    const row = isRecordId(id) ? await projectsStore.find(this.pool, id) : null;
    if (!row) throw notFound('project', id);
    return row;
  }

  async create(ctx: RequestContext, input: ProjectCreateInput): Promise<ProjectRow> {
    try {
      const id = await this.pool.transaction(async (tx) => {
        const workspaceId =
          input.workspace === undefined ? DEFAULT_WORKSPACE_ID : await this.workspaceId(tx, input.workspace);
        return projectsStore.insert(tx, input.name, workspaceId);
      });
      return await this.get(ctx, id);
    } catch (error) {
      throw this.translated(error, input);
    }
  }

  /** Renames a project or moves it to another workspace; its id, contents, tokens and bindings stay. */
  async update(ctx: RequestContext, id: string, input: ProjectUpdateInput): Promise<ProjectRow> {
    if (!isRecordId(id)) throw notFound('project', id);
    try {
      await this.pool.transaction(async (tx) => {
        const workspaceId =
          input.workspace === undefined ? undefined : await this.workspaceId(tx, input.workspace);
        const result = await projectsStore.update(tx, id, { name: input.name, workspaceId });
        if (result.rowCount === 0) throw notFound('project', id);
      });
    } catch (error) {
      throw this.translated(error, input);
    }
    return this.get(ctx, id);
  }

  /**
   * Deletes a project and the role bindings scoped to it; its API tokens and the sessions whose
   * active project it was end with it. Refused while it holds pipelines or connections
   * (PROJECT_IN_USE, naming them), and for the default project.
   */
  async delete(_ctx: RequestContext, id: string): Promise<void> {
    if (!isRecordId(id)) throw notFound('project', id);
    await this.pool.transaction(async (tx) => {
      const locked = await projectsStore.lock(tx, id);
      if (!locked) throw notFound('project', id);
      if (id === DEFAULT_PROJECT_ID) {
        throw new AppError(
          'DEFAULT_NOT_DELETABLE',
          `project '${locked.name}' is the default project, where requests without a project act; it can be renamed but not deleted`,
        );
      }
      const { pipelines, connections } = await projectsStore.contents(tx, id);
      if (pipelines.length > 0 || connections.length > 0) {
        const held = [
          pipelines.length > 0 ? `pipelines ${pipelines.map((n) => `'${n}'`).join(', ')}` : '',
          connections.length > 0 ? `connections ${connections.map((n) => `'${n}'`).join(', ')}` : '',
        ].filter(Boolean);
        throw new AppError(
          'PROJECT_IN_USE',
          `project '${locked.name}' holds ${held.join(' and ')}; delete them first`,
          { pipelines, connections },
        );
      }
      try {
        await projectsStore.delete(tx, id);
      } catch (error) {
        // Some other record still names the project: as much in use as a pipeline would be.
        if (error instanceof ForeignKeyIntegrityConstraintViolationError) {
          throw new AppError(
            'PROJECT_IN_USE',
            `project '${locked.name}' is still referenced (${error.table})`,
          );
        }
        throw error;
      }
    });
  }

  /** The id of the workspace a body names; an unknown name is a 422 on the `workspace` field. */
  private async workspaceId(db: CommonQueryMethods, name: string): Promise<string> {
    const row = await workspacesStore.findByName(db, name);
    if (!row) throw validationFailed('workspace', `no workspace is named '${name}'`);
    return row.id;
  }

  private translated(error: unknown, input: { name?: string; workspace?: string }): unknown {
    if (error instanceof UniqueIntegrityConstraintViolationError) return alreadyExists(input.name ?? '');
    // The workspace was deleted between the lookup and the write.
    if (error instanceof ForeignKeyIntegrityConstraintViolationError) {
      return validationFailed('workspace', `no workspace is named '${input.workspace}'`);
    }
    return error;
  }
}
