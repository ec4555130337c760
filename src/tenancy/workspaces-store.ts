import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

/** A workspace as the API shows it, with the number of projects it holds. */
export const WorkspaceRow = z.object({
  id: z.string(),
  name: z.string(),
  project_count: z.number(),
  created_at: z.string(),
});
export type WorkspaceRow = z.infer<typeof WorkspaceRow>;

const SELECT = sql.fragment`
  SELECT w.id, w.name, (SELECT count(*) FROM projects p WHERE p.workspace_id = w.id)::int AS project_count,
    w.created_at
  FROM workspaces w`;

export const workspacesStore = {
  list: (db: CommonQueryMethods) =>
    db.any(
      sql.type(WorkspaceRow)`${SELECT} WHERE w.organization_id = ${DEFAULT_ORGANIZATION_ID} ORDER BY w.name`,
    ),

  find: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(
      sql.type(WorkspaceRow)`${SELECT} WHERE w.organization_id = ${DEFAULT_ORGANIZATION_ID} AND w.id = ${id}`,
    ),

  findByName: (db: CommonQueryMethods, name: string) =>
    db.maybeOne(
      sql.type(
        WorkspaceRow,
      )`${SELECT} WHERE w.organization_id = ${DEFAULT_ORGANIZATION_ID} AND w.name = ${name}`,
    ),

  /** Locks the workspace's row until the transaction ends: no project is moved into it meanwhile. */
  lock: (db: CommonQueryMethods, id: string) =>
    db.maybeOne(sql.type(z.object({ id: z.string(), name: z.string() }))`
      SELECT id, name FROM workspaces
      WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND id = ${id} FOR UPDATE`),

  insert: (db: CommonQueryMethods, name: string) =>
    db.one(sql.type(z.object({ id: z.string() }))`
      INSERT INTO workspaces (organization_id, name) VALUES (${DEFAULT_ORGANIZATION_ID}, ${name}) RETURNING id`),

  rename: (db: CommonQueryMethods, id: string, name: string) =>
    db.query(sql.unsafe`
      UPDATE workspaces SET name = ${name} WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND id = ${id}`),

  /** Deletes an empty workspace with the role bindings scoped to it (they have no foreign key). */
  delete: async (db: CommonQueryMethods, id: string) => {
    await db.query(sql.unsafe`DELETE FROM role_bindings WHERE scope_type = 'workspace' AND scope_id = ${id}`);
    await db.query(sql.unsafe`DELETE FROM workspaces WHERE id = ${id}`);
  },
};
