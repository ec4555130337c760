import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const OrphanedSlotRow = z.object({
  connection_name: z.string(),
  slot_name: z.string(),
  pipeline_id: z.string(),
  pipeline_name: z.string(),
  reason: z.string(),
  drop_statement: z.string(),
  created_at: z.string(),
});
export type OrphanedSlotRow = z.infer<typeof OrphanedSlotRow>;

const COLUMNS = sql.fragment`connection_name, slot_name, pipeline_id, pipeline_name, reason, drop_statement,
  created_at`;

/** What a forced delete left behind on a source, as recorded for the source connection's view. */
export interface OrphanedSlotWrite {
  connection: string;
  slot: string;
  pipelineId: string;
  pipelineName: string;
  reason: string;
  dropStatement: string;
}

/** Replication slots a forced pipeline delete could not drop, by the source connection's name. */
export const orphanedSlotsStore = {
  record: (db: CommonQueryMethods, projectId: string, w: OrphanedSlotWrite) =>
    db.query(sql.unsafe`INSERT INTO orphaned_slots
        (project_id, connection_name, slot_name, pipeline_id, pipeline_name, reason, drop_statement)
      VALUES (${projectId}, ${w.connection}, ${w.slot}, ${w.pipelineId}, ${w.pipelineName}, ${w.reason},
        ${w.dropStatement})
      ON CONFLICT (project_id, connection_name, slot_name) DO UPDATE
        SET reason = EXCLUDED.reason, created_at = now()`),

  /** The orphans of the named connections of a project, oldest first. */
  listFor: (db: CommonQueryMethods, projectId: string, connections: readonly string[]) =>
    db.any(sql.type(OrphanedSlotRow)`SELECT ${COLUMNS} FROM orphaned_slots
      WHERE project_id = ${projectId} AND connection_name = ANY(${sql.array(connections, 'text')})
      ORDER BY created_at, slot_name`),

  find: (db: CommonQueryMethods, projectId: string, connection: string, slot: string) =>
    db.maybeOne(sql.type(OrphanedSlotRow)`SELECT ${COLUMNS} FROM orphaned_slots
      WHERE project_id = ${projectId} AND connection_name = ${connection} AND slot_name = ${slot}`),

  forget: (db: CommonQueryMethods, projectId: string, connection: string, slot: string) =>
    db.query(sql.unsafe`DELETE FROM orphaned_slots
      WHERE project_id = ${projectId} AND connection_name = ${connection} AND slot_name = ${slot}`),
};
