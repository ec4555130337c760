import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import type { TableSchema } from '../core/change.js';
import type { SchemaChangeItem } from '../core/schema-diff.js';

/** A proposed change of one table's shape, as stored and shown. */
export interface SchemaProposal {
  current: TableSchema;
  /** The shape the sink gets if approved. */
  proposed: TableSchema;
  /** The source's whole shape, when the sink keeps changes decided against earlier out of `proposed`. */
  source?: TableSchema;
  changes: SchemaChangeItem[];
  ddl: string[];
}

const ProposalRow = z.object({
  id: z.string(),
  table_name: z.string(),
  status: z.string(),
  proposal: z.custom<SchemaProposal>(),
  created_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.string().nullable(),
});
export type ProposalRow = z.infer<typeof ProposalRow>;

const Schemas = z.object({
  table_name: z.string(),
  known_schema: z.custom<TableSchema>().nullable(),
  source_schema: z.custom<TableSchema>().nullable(),
});

export const schemaStore = {
  /** The shapes the sink has (known) and the last source shape it chose not to follow, per table. */
  tableSchemas: (db: CommonQueryMethods, pipelineId: string) =>
    db.any(sql.type(Schemas)`SELECT table_name, known_schema, source_schema FROM pipeline_tables
      WHERE pipeline_id = ${pipelineId}`),

  setKnown: (db: CommonQueryMethods, pipelineId: string, table: string, known: TableSchema) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET known_schema = ${sql.jsonb(known as never)}, source_schema = NULL
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  /** Remembers a source shape the sink does not follow (ignored or rejected). */
  setSourceOnly: (db: CommonQueryMethods, pipelineId: string, table: string, source: TableSchema) =>
    db.query(sql.unsafe`UPDATE pipeline_tables SET source_schema = ${sql.jsonb(source as never)}
      WHERE pipeline_id = ${pipelineId} AND table_name = ${table}`),

  pending: (db: CommonQueryMethods, pipelineId: string) =>
    db.maybeOne(sql.type(
      ProposalRow,
    )`SELECT id, table_name, status, proposal, created_at, decided_at, decided_by
      FROM schema_proposals WHERE pipeline_id = ${pipelineId} AND status = 'pending'`),

  /**
   * Stores a pending proposal, replacing an older pending one (the newer shape supersedes it). The
   * same change proposed again (the stream announces it again after a restart) keeps the pending
   * proposal and its id, so a review under way is not made stale.
   */
  propose: async (
    db: CommonQueryMethods,
    pipelineId: string,
    projectId: string,
    table: string,
    p: SchemaProposal,
  ) => {
    const same = await db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM schema_proposals
      WHERE pipeline_id = ${pipelineId} AND status = 'pending' AND table_name = ${table}
        AND proposal = ${sql.jsonb(p as never)}`);
    if (same) return same;
    await db.query(
      sql.unsafe`DELETE FROM schema_proposals WHERE pipeline_id = ${pipelineId} AND status = 'pending'`,
    );
    return db.oneFirst(sql.type(z.object({ id: z.string() }))`INSERT INTO schema_proposals
      (project_id, pipeline_id, table_name, proposal) VALUES (${projectId}, ${pipelineId}, ${table}, ${sql.jsonb(p as never)})
      RETURNING id`);
  },

  /** Records an automatic change, for the record. */
  recordApplied: (
    db: CommonQueryMethods,
    pipelineId: string,
    projectId: string,
    table: string,
    p: SchemaProposal,
  ) =>
    db.query(sql.unsafe`INSERT INTO schema_proposals (project_id, pipeline_id, table_name, proposal, status, decided_at,
      decided_by) VALUES (${projectId}, ${pipelineId}, ${table}, ${sql.jsonb(p as never)}, 'applied', now(), 'auto')`),

  decide: (db: CommonQueryMethods, id: string, status: 'approved' | 'rejected', actor: string) =>
    db.query(sql.unsafe`UPDATE schema_proposals SET status = ${status}, decided_at = now(), decided_by = ${actor}
      WHERE id = ${id} AND status = 'pending'`),
};
