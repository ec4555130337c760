import { Type } from 'typebox';
import { PIPELINE_ACTIONS } from '../../../machines/pipeline.js';
import { Timestamp } from './common.js';
import { LAG_DESCRIPTION, LagBytes, RetainedWalBytes } from './pipelines.js';

export const StateChangeBody = Type.Object(
  {
    state: Type.Union(
      PIPELINE_ACTIONS.map((a) => Type.Literal(a)),
      { description: 'The action: start, stop, pause or resume' },
    ),
  },
  { additionalProperties: false },
);

export const BackfillBody = Type.Object(
  {
    tables: Type.Array(Type.String({ description: 'A `<schema>.<table>` of the pipeline' }), {
      minItems: 1,
      uniqueItems: true,
      description: 'Tables to copy again',
    }),
  },
  { additionalProperties: false },
);

export const BackfillAccepted = Type.Object({
  name: Type.String(),
  tables: Type.Array(Type.String()),
  state: Type.String({
    description:
      'The pipeline state: a failed pipeline is started to copy them (`starting`; the way back from ' +
      '`SINK_TABLE_CHANGED`); a stopped or paused pipeline copies them when it starts',
  }),
});

export const ResyncAccepted = Type.Object({
  name: Type.String(),
  tables: Type.Array(Type.String(), { description: 'The tables copied again: every table of the pipeline' }),
  state: Type.String({
    description:
      'The pipeline state: `starting`, as a resync starts the pipeline at once (with a new slot, every table ' +
      'copied again); asked of an instance that does not run the pipeline, its state before, as its owner ' +
      'carries the resync out within about a second',
  }),
});

export const PipelineMetrics = Type.Object({
  name: Type.String(),
  state: Type.String(),
  events_per_second: Type.Number({ description: 'Events applied per second, over the last 5 s' }),
  replication_lag_seconds: Type.Number({ description: LAG_DESCRIPTION }),
  replication_lag_bytes: LagBytes,
  retained_wal_bytes: RetainedWalBytes,
  last_checkpoint_at: Type.Union([Timestamp, Type.Null()]),
  events_total: Type.Integer({ description: 'Change events applied, over the life of the pipeline' }),
  sink_errors_total: Type.Integer({ description: 'Failed sink writes, over the life of the pipeline' }),
});

export const SnapshotProgress = Type.Object({
  phase: Type.String({ description: '`snapshot`, `streaming`, or `idle` when the pipeline is not running' }),
  tables: Type.Array(
    Type.Object({
      table: Type.String(),
      status: Type.Union(
        [
          Type.Literal('pending'),
          Type.Literal('snapshot'),
          Type.Literal('backfill'),
          Type.Literal('streaming'),
          Type.Literal('dropped'),
          Type.Literal('sink_changed'),
        ],
        {
          description:
            '`pending`, `snapshot` (being copied), `backfill` (being copied again), `streaming` (copied), ' +
            '`dropped` (gone from the source: dropped or renamed there; no longer replicated, the sink keeps its copy) or ' +
            '`sink_changed` (its sink table was dropped, lost columns or was emptied outside the pipeline, which ' +
            'failed with SINK_TABLE_CHANGED; `reason` says what, and a backfill of the table copies it again)',
        },
      ),
      partitions_total: Type.Integer(),
      partitions_done: Type.Integer(),
      rows_total: Type.Integer({
        description: "Estimate from the source's statistics until the copy is done",
      }),
      rows_done: Type.Integer(),
      percent: Type.Number({ description: '0 to 100' }),
      eta_seconds: Type.Union([Type.Integer(), Type.Null()], {
        description: 'Seconds left at the rate of the copy so far; null when not copying',
      }),
      reason: Type.Union([Type.String(), Type.Null()], {
        description:
          'Why a `dropped` table is (e.g. it does not exist at the source any more), or what is wrong with a ' +
          "`sink_changed` table's sink table; null otherwise",
      }),
      dropped_at: Type.Union([Timestamp, Type.Null()], {
        description: 'When the table was found gone from the source; null unless `dropped`',
      }),
      partitions: Type.Array(
        Type.Object({
          partition: Type.String(),
          lower_bound: Type.Union([Type.String(), Type.Null()], { description: 'First key, null = open' }),
          upper_bound: Type.Union([Type.String(), Type.Null()], {
            description: 'Key after the last, null = open',
          }),
          status: Type.String({ description: '`pending`, `copying` or `done`' }),
          rows_done: Type.Integer(),
        }),
        { description: 'The partition plan of the last copy of the table' },
      ),
    }),
  ),
});

export const RunsQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,3}$',
        description: 'a whole number of runs per page, 1 to 100 (default 20)',
      }),
    ),
    cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const RunHistory = Type.Object({
  runs: Type.Array(
    Type.Object({
      id: Type.String(),
      project_id: Type.String({ description: "The pipeline's project" }),
      started_at: Timestamp,
      ended_at: Type.Union([Timestamp, Type.Null()]),
      duration_ms: Type.Integer({ description: 'Until ended_at, or until now for the current run' }),
      events_total: Type.Integer(),
      outcome: Type.String({
        description:
          '`running`, `stopped`, `failed`, `shutdown` (the process stopped), `interrupted` (it died), `deleted`, ' +
          '`resync` (a resync was accepted here: the runs after it stream from a new slot)',
      }),
      error: Type.Union([Type.String(), Type.Null()]),
    }),
    { description: 'Newest first' },
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` for the next page',
  }),
});

export const HistoryQuery = Type.Object(
  {
    window: Type.Optional(
      Type.String({ description: 'How far back: a duration up to 48h (15m, 1h, 24h); default 1h' }),
    ),
  },
  { additionalProperties: false },
);

export const PipelineHistory = Type.Object({
  resolution_seconds: Type.Integer({
    description: 'Seconds each point covers: 10, or more over a window longer than 2 h (120 over 24 h)',
  }),
  points: Type.Array(
    Type.Object({
      at: Timestamp,
      state: Type.String({ description: 'The pipeline state at the end of the point' }),
      phase: Type.String({ description: '`idle`, `snapshot` or `streaming`' }),
      events_per_second: Type.Number({
        description: 'Events applied per second: mean of the seconds of the point',
      }),
      copy_rows_per_second: Type.Number({
        description:
          'Rows copied per second (snapshot or backfill, all tables; copied rows are not events): mean of the seconds of the point; 0 when nothing was copied',
      }),
      lag_ms: Type.Integer({ description: 'Largest lag of the seconds of the point' }),
      lag_bytes: Type.Union([Type.Integer(), Type.Null()], {
        description: 'Largest lag in bytes; null when not measured',
      }),
      sink_errors: Type.Integer({ description: 'Sink batches that failed in those seconds' }),
    }),
    { description: 'Oldest first; a gap is a time no instance ran the pipeline' },
  ),
});
