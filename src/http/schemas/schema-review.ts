import { Type } from 'typebox';
import { Timestamp } from './common.js';

const Column = Type.Object({
  name: Type.String(),
  type: Type.String({ description: 'format_type of the source, e.g. numeric(12,2)' }),
  nullable: Type.Boolean(),
  key: Type.Boolean(),
});

export const SchemaProposalView = Type.Object({
  id: Type.String({
    description: 'Pass as proposal_id when deciding, to be sure to decide on what was read',
  }),
  table: Type.String(),
  status: Type.String({ description: '`pending`, `approved` or `rejected`' }),
  created_at: Timestamp,
  decided_at: Type.Union([Timestamp, Type.Null()]),
  decided_by: Type.Union([Type.String(), Type.Null()]),
  current_columns: Type.Array(Column, { description: 'The table as the sink has it' }),
  proposed_columns: Type.Array(Column, { description: 'The table as the source now has it' }),
  changes: Type.Array(
    Type.Object(
      {
        kind: Type.String({
          description:
            'add_column, drop_column, rename_column, alter_type, set_not_null, drop_not_null, change_key',
        }),
      },
      { additionalProperties: true },
    ),
  ),
  ddl: Type.Array(Type.String(), { description: 'The statements the sink runs on approval, in order' }),
  skipped_ddl: Type.Optional(
    Type.Array(Type.String(), {
      description:
        'On approve: statements not run because the sink already had their change (made by hand); empty when all ran',
    }),
  ),
});

export const DecisionBody = Type.Union([
  Type.Object({ proposal_id: Type.Optional(Type.String()) }, { additionalProperties: false }),
  Type.Null(),
]);
