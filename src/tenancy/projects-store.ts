import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

/** A project as the API shows it, with the name of its workspace beside the workspace's id. */
export const ProjectRow = z.object({
  id: z.string(),
  name: z.string(),
  workspace_id: z.string(),
  workspace: z.string(),
  created_at: z.string(),
});
export type ProjectRow = z.infer<typeof ProjectRow>;

const SELECT = sql.fragment`
  SELECT p.id, p.name, p.workspace_id, w.name AS workspace, p.created_at
  FROM projects p JOIN workspaces w ON w.id = p.workspace_id`;

const Names = z.object({ name: z.string() });

export const projectsStore = {
  /** The projects, by name; with a workspace id, only that workspace's. */
  list: (db: CommonQueryMethods, workspaceId?: string) =>
    db.any(sql.type(ProjectRow)`${SELECT}
      WHERE p.organization_id = ${DEFAULT_ORGANIZATION_ID}
        ${workspaceId === undefined ? sql.fragment`` : sql.fragment`AND p.workspace_id = ${workspaceId}`}
      ORDER BY p.name`),

  find: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(
      sql.type(ProjectRow)`${SELECT} WHERE p.organization_id = ${DEFAULT_ORGANIZATION_ID} AND p.id = ${id}`,
    ),

  findByName: (db: CommonQueryMethods, name: string) =>
    db.maybeOne(
      sql.type(
        ProjectRow,
      )`${SELECT} WHERE p.organization_id = ${DEFAULT_ORGANIZATION_ID} AND p.name = ${name}`,
    ),

  /** The names of a workspace's projects. */
  namesIn: (db: CommonQueryMethods, workspaceId: string) =>
    db.anyFirst(sql.type(Names)`SELECT name FROM projects WHERE workspace_id = ${workspaceId} ORDER BY name`),

  /**
   * Locks the project's row until the transaction ends. Inserting a connection or pipeline into it
   * waits for the lock (its foreign key check), so what the delete counted cannot change under it.
   */
  lock: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(Names)`
      SELECT name FROM projects WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND id = ${id} FOR UPDATE`),

  insert: (db: CommonQueryMethods, name: string, workspaceId: string) =>
    db.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO projects (organization_id, workspace_id, name)
      VALUES (${DEFAULT_ORGANIZATION_ID}, ${workspaceId}, ${name}) RETURNING id`),

  update: (db: CommonQueryMethods, id: string, changes: { name?: string; workspaceId?: string }) =>
    db.query(sql.unsafe`
      UPDATE projects SET
        name = coalesce(${changes.name ?? null}::text, name),
        workspace_id = coalesce(${changes.workspaceId ?? null}::uuid, workspace_id)
      WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND id = ${id}`),

  /** What the project still holds: the names of its pipelines and connections. */
  contents: async (db: CommonQueryMethods, id: string) => ({
    pipelines: await db.anyFirst(
      sql.type(Names)`SELECT name FROM pipelines WHERE project_id = ${id} ORDER BY name`,
    ),
    connections: await db.anyFirst(
      sql.type(Names)`SELECT name FROM connections WHERE project_id = ${id} ORDER BY name`,
    ),
  }),

  /** Deletes a project with the role bindings scoped to it (they have no foreign key). */
  delete: async (db: CommonQueryMethods, id: string) => {
    await db.query(sql.unsafe`DELETE FROM role_bindings WHERE scope_type = 'project' AND scope_id = ${id}`);
    await db.query(sql.unsafe`DELETE FROM projects WHERE id = ${id}`);
  },
};
