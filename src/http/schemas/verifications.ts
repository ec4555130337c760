import { Type } from 'typebox';
import { NO_CONTROL_CHARACTERS, ref, Timestamp } from './common.js';

export const VerifyBody = Type.Object(
  {
    tables: Type.Optional(
      Type.Array(Type.String({ description: 'A `<schema>.<table>` of the pipeline' }), {
        description: 'The tables to verify; every table of the pipeline when absent or empty',
      }),
    ),
    source_share: Type.Optional(
      Type.Number({
        minimum: 0.01,
        maximum: 1,
        description:
          "The share of the source's time (of the one session it reads with) the verification may take: after a " +
          'read that took t, it rests t × (1 − share) / share. 1 (the default) reads without rest; 0.25 keeps it ' +
          'to a quarter',
      }),
    ),
  },
  { additionalProperties: false },
);

export const VerificationParams = Type.Object({
  name: Type.String({ pattern: NO_CONTROL_CHARACTERS, description: 'a pipeline name' }),
  id: Type.String({ pattern: NO_CONTROL_CHARACTERS, description: 'a verification id (UUID)' }),
});

export const VerificationsQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,3}$', description: 'how many, newest first, 1 to 100 (default 20)' }),
    ),
  },
  { additionalProperties: false },
);

const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const TableVerdict = Type.Object({
  table: Type.String({ description: '`<schema>.<table>` at the source' }),
  status: Type.Union([Type.Literal('matched'), Type.Literal('differs'), Type.Literal('not_verified')], {
    description:
      '`matched`: every compared row is equal at both sides; `differs`: some rows are missing, extra or changed in ' +
      'the sink; `not_verified`: the table could not be compared (`reason` says why: a key type without an order ' +
      'both sides share, or the table is being copied)',
  }),
  reason: Type.Optional(
    Type.String({ description: 'Why the table is not verified, or what qualifies its verdict' }),
  ),
  columns_not_verified: Type.Array(Type.Object({ column: Type.String(), reason: Type.String() }), {
    description: 'Columns the sink cannot compare exactly, left out of the comparison (never silently)',
  }),
  source_rows: Count('Rows counted at the source (each range at its own moment)'),
  sink_rows: Count('Rows counted in the sink'),
  missing: Count('Rows the source has and the sink lacks'),
  extra: Count('Rows the sink has and the source does not'),
  changed: Count('Rows at both sides with other values'),
  unsettled: Count('Rows the source changed at every re-read: compared neither way'),
  sample_keys: Type.Array(
    Type.Object({
      kind: Type.Union([
        Type.Literal('missing'),
        Type.Literal('extra'),
        Type.Literal('changed'),
        Type.Literal('unsettled'),
      ]),
      key: Type.Record(Type.String(), Type.String(), {
        description: 'The key, by column, as the source prints it',
      }),
    }),
    { description: 'Up to 100 keys, the differing ones first' },
  ),
  rows_read: Count('Rows read at both sides for this table'),
});

export const Verification = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    pipeline: Type.String(),
    status: Type.Union(
      [
        Type.Literal('queued'),
        Type.Literal('running'),
        Type.Literal('completed'),
        Type.Literal('failed'),
        Type.Literal('cancelled'),
      ],
      { description: '`queued` until the instance running the pipeline takes it (within about a second)' },
    ),
    result: Type.Union(
      [Type.Literal('matched'), Type.Literal('differs'), Type.Literal('not_verified'), Type.Null()],
      { description: "The worst of the tables' statuses, once completed; null before" },
    ),
    trigger: Type.Union([Type.Literal('request'), Type.Literal('schedule'), Type.Literal('repair')], {
      description: "Who asked: a user, the pipeline's schedule, or a repair verifying what it copied",
    }),
    tables_requested: Type.Array(Type.String(), { description: 'The tables asked for; empty for all' }),
    tables: Type.Array(TableVerdict, { description: 'One verdict per table, as each is done' }),
    rows_read: Count('Rows read at both sides'),
    source_share: Type.Number(),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed' }),
    repair: Type.Union([
      Type.Object({
        status: Type.Union([
          Type.Literal('queued'),
          Type.Literal('running'),
          Type.Literal('completed'),
          Type.Literal('failed'),
        ]),
        error: Type.Union([Type.String(), Type.Null()]),
        verification_id: Type.Union([Type.String(), Type.Null()], {
          description: 'The verification of the repaired tables that follows a completed repair',
        }),
      }),
      Type.Null(),
    ]),
    repair_of: Type.Union([Type.String(), Type.Null()], {
      description: 'For a verification of a repair: the verification whose rows were repaired',
    }),
    created_at: Timestamp,
    started_at: Type.Union([Timestamp, Type.Null()]),
    finished_at: Type.Union([Timestamp, Type.Null()]),
    duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  },
  { $id: 'Verification' },
);

export const VerificationList = Type.Object({ verifications: Type.Array(ref(Verification)) });
