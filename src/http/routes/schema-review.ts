import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TableSchema } from '../../core/change.js';
import type { SchemaDecisions } from '../../runtime/schema-decisions.js';
import type { ProposalRow } from '../../store/schema-store.js';
import { errorResponses, NameParams } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';
import { DecisionBody, SchemaProposalView } from '../schemas/schema-review.js';

const tags = ['schema review'];

const columns = (t: TableSchema) =>
  t.columns.map((c) => ({
    name: c.name,
    type: c.typeName,
    nullable: c.nullable,
    key: t.keyColumns.includes(c.name),
  }));

const view = (
  row: Pick<
    ProposalRow,
    'id' | 'table_name' | 'status' | 'proposal' | 'created_at' | 'decided_at' | 'decided_by'
  >,
) => ({
  id: row.id,
  table: row.table_name,
  status: row.status,
  created_at: row.created_at,
  decided_at: row.decided_at,
  decided_by: row.decided_by,
  current_columns: columns(row.proposal.current),
  proposed_columns: columns(row.proposal.proposed),
  changes: row.proposal.changes,
  ddl: row.proposal.ddl,
});

export const schemaReviewRoutes: FastifyPluginAsyncTypebox<{ decisions: SchemaDecisions }> = async (
  app,
  { decisions },
) => {
  addComponentSchemas(app);
  app.get(
    '/pipelines/:name/schema/proposed',
    {
      config: { permission: 'read' },
      schema: {
        operationId: 'getProposedSchemaChange',
        tags,
        summary: 'The schema change the pipeline waits on; 404 NOT_FOUND when none is pending',
        params: NameParams,
        response: { 200: SchemaProposalView, ...errorResponses(404) },
      },
    },
    async (request) => view(await decisions.proposed(request.ctx, request.params.name)),
  );

  for (const decision of ['approve', 'reject'] as const) {
    app.post(
      `/pipelines/:name/schema/${decision}`,
      {
        config: { permission: 'edit', action: `schema.${decision}` },
        schema: {
          operationId: decision === 'approve' ? 'approveSchemaChange' : 'rejectSchemaChange',
          tags,
          summary:
            decision === 'approve'
              ? 'Approve the pending change: its DDL runs on the sink and the pipeline resumes with nothing lost'
              : 'Reject the pending change: the sink keeps its columns, only those are written, and the pipeline resumes',
          params: NameParams,
          body: DecisionBody,
          response: { 200: SchemaProposalView, ...errorResponses(400, 404, 409) },
        },
      },
      async (request) => {
        const decided = await decisions.decide(
          request.ctx,
          request.params.name,
          decision,
          request.body?.proposal_id,
        );
        return {
          ...view({ ...decided, decided_at: new Date().toISOString() }),
          skipped_ddl: decided.skipped,
        };
      },
    );
  }
};
