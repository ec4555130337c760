import { Type } from 'typebox';
import { DEFAULT_SNAPSHOT_OPTIONS, SNAPSHOT_LIMITS } from '../../pipelines/snapshot-options.js';
import { SOURCE_SLOT_DEFAULT_RULE } from '../../pipelines/source-slot.js';
import { PUBLICATION_NAME_PATTERN, TABLE_NAME_PATTERN, TABLE_NAME_RULE } from '../../pipelines/table-name.js';
import { sinkTypes } from '../../sinks/registry.js';
import { ConnectionReference, Name, Timestamp } from './common.js';
import { sinkPropertiesSchemaName } from './sink-properties.js';

const PUBLICATION_DESCRIPTION =
  "A publication made at the source by its tables' owner, publishing every table of the pipeline (insert, update, " +
  'delete, truncate, no row filter or column list): the service streams through it and never alters or drops ' +
  'it, so the source role needs no CREATE on the database nor ownership of the tables. Left out: the pipeline ' +
  'creates, alters and at deletion drops its own publication, replicator_<pipeline id>';

const SLOT_DESCRIPTION =
  "How the pipeline reads its source's changes. shared: from the stream its source connection's pipelines " +
  'share, one replication slot and one walsender on the source for all of them. own: from a replication slot ' +
  "of its own, for isolation: its own walsender, whose pace never touches the others' nor theirs its own; " +
  `each such pipeline costs the source one more slot and walsender. Default: ${SOURCE_SLOT_DEFAULT_RULE}. ` +
  '422 VALIDATION_FAILED on source.slot for shared with a publication (a shared stream publishes the union of ' +
  "its pipelines' tables through a publication it owns; a pipeline reading a publication the user made needs " +
  'a slot of its own), and for a replacement or apply giving another mode than the stored one (the mode is ' +
  "chosen when a pipeline is created, as the pipeline's position lives in its slot: create a new pipeline to " +
  'change it). Left out of a replacement, the stored mode is kept (a publication named then on a shared ' +
  'pipeline is a 422 on source.publication)';

const SourceSlot = (description: string) =>
  Type.Union([Type.Literal('shared'), Type.Literal('own')], { description });

const Source = Type.Object(
  {
    connection: ConnectionReference,
    tables: Type.Array(Type.String({ pattern: TABLE_NAME_PATTERN, description: TABLE_NAME_RULE }), {
      minItems: 1,
      maxItems: 1000,
      description: 'Tables to replicate, each "<schema>.<table>"',
    }),
    publication: Type.Optional(
      Type.String({
        pattern: PUBLICATION_NAME_PATTERN,
        description: PUBLICATION_DESCRIPTION,
      }),
    ),
    slot: Type.Optional(SourceSlot(SLOT_DESCRIPTION)),
  },
  { additionalProperties: false },
);

// Each sink's keys, from the same documentation the docs' sink tables are made of.
const SINK_PROPERTIES_DESCRIPTION = `Properties of the sink the connection's type chooses, string values; unknown keys are refused (422). ${sinkTypes()
  .map((type) => `${type}: ${sinkPropertiesSchemaName(type)}`)
  .join(', ')} in components.schemas list each type's keys, their meaning and default.`;

const Sink = Type.Object(
  {
    connection: ConnectionReference,
    properties: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: SINK_PROPERTIES_DESCRIPTION }),
    ),
  },
  { additionalProperties: false },
);

const SnapshotOptions = Type.Object(
  {
    parallelism: Type.Optional(
      Type.Integer({
        ...SNAPSHOT_LIMITS.parallelism,
        description: `Partitions copied at once (default ${DEFAULT_SNAPSHOT_OPTIONS.parallelism})`,
      }),
    ),
    partition_rows: Type.Optional(
      Type.Integer({
        ...SNAPSHOT_LIMITS.partition_rows,
        description: `Rows per partition, about (default ${DEFAULT_SNAPSHOT_OPTIONS.partitionRows})`,
      }),
    ),
  },
  { additionalProperties: false, description: 'How snapshots are cut and copied' },
);

const SchemaPolicy = Type.Union([Type.Literal('review'), Type.Literal('auto'), Type.Literal('ignore')], {
  description:
    "What a change of a source table's shape does: review (default) waits in pending_schema_approval; auto applies " +
    'compatible changes (added columns, widened types, dropped NOT NULL) and waits for the others; ignore keeps ' +
    "the sink's columns and replicates only those",
});

const VerifyOptions = Type.Object(
  {
    interval: Type.Optional(
      Type.String({
        description:
          'Verify the pipeline against its source this often (a duration: 6h, 90m, 1d; at least 1m), the first as ' +
          'soon as it streams, while it runs; left out: never on its own. See docs/operations/verify-and-repair.md',
      }),
    ),
    source_share: Type.Optional(
      Type.Number({
        minimum: 0.01,
        maximum: 1,
        description:
          "The share of the source's time the scheduled verifications may take (0.01 to 1, default 1: no rest)",
      }),
    ),
  },
  { additionalProperties: false, description: 'Scheduled verification of the sink against the source' },
);

export const PipelineCreateBody = Type.Object(
  {
    name: Name,
    source: Source,
    sink: Sink,
    snapshot: Type.Optional(SnapshotOptions),
    verify: Type.Optional(VerifyOptions),
    schema_policy: Type.Optional(SchemaPolicy),
  },
  { additionalProperties: false },
);

export const PipelineReplaceBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'If given, must equal the name in the path' })),
    source: Source,
    sink: Sink,
    snapshot: Type.Optional(SnapshotOptions),
    verify: Type.Optional(VerifyOptions),
    schema_policy: Type.Optional(SchemaPolicy),
  },
  { additionalProperties: false },
);

/** Lag as the list, the pipeline and the live feed give it, in milliseconds. */
export const LAG_DESCRIPTION =
  'Age of the oldest source change not yet durable in the sink, whether the pipeline received it or not ' +
  '(paused, held for schema review, failed, its sink down, its stream behind); 0 when the sink holds everything ' +
  'the source wrote. Measured against the source every second while the pipeline keeps its slot; 0 when stopped. ' +
  'See docs/api/metrics.md, Lag';

export const LagBytes = Type.Union([Type.Integer(), Type.Null()], {
  description:
    "Source WAL written after the position the sink holds durably (the source's WAL end minus the " +
    "pipeline's acknowledged position), in bytes; null when not measured (stopped, source not read yet)",
});

export const RetainedWalBytes = Type.Union([Type.Integer(), Type.Null()], {
  description:
    "WAL the source keeps for the pipeline's slot (its WAL end minus the slot's restart position), in bytes; " +
    'null when not measured',
});

const LastCheckpointAt = Type.Union([Timestamp, Type.Null()], {
  description: 'Time of the last durable checkpoint; null before the first',
});

export const PipelineSummary = Type.Object(
  {
    name: Type.String(),
    project_id: Type.String({
      description: "The pipeline's project; with authentication off the list holds every project's",
    }),
    state: Type.String(),
    events_per_second: Type.Number(),
    replication_lag_ms: Type.Integer({ description: LAG_DESCRIPTION }),
    last_checkpoint_at: LastCheckpointAt,
  },
  { $id: 'PipelineSummary' },
);

export const Pipeline = Type.Object(
  {
    id: Type.String(),
    project_id: Type.String(),
    name: Type.String(),
    source: Type.Object({
      connection: Type.String(),
      tables: Type.Array(Type.String()),
      publication: Type.Optional(Type.String({ description: 'The publication the user made, when named' })),
      slot: SourceSlot(
        "shared: reads its source connection's shared stream (one slot and walsender for all its pipelines); " +
          'own: a replication slot of its own. Chosen at creation, never changed',
      ),
    }),
    sink: Type.Object({ connection: Type.String(), properties: Type.Record(Type.String(), Type.String()) }),
    snapshot: Type.Object({ parallelism: Type.Integer(), partition_rows: Type.Integer() }),
    verify: Type.Object({
      interval: Type.Union([Type.String(), Type.Null()], {
        description: 'The verification schedule; null: none',
      }),
      source_share: Type.Number(),
    }),
    schema_policy: Type.String({ description: 'review, auto or ignore' }),
    state: Type.String({
      description: 'stopped, starting, running, stopping, paused, pending_schema_approval',
    }),
    desired_state: Type.String({
      description: 'What the pipeline was last asked to be: stopped, running, paused',
    }),
    error: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why the pipeline last failed, if it did; while a running pipeline retries (e.g. a server out of reach), the reason. Cleared once it is healthy again (the sink took a batch, or the stream caught up with an idle source), by stop, and by a successful start',
    }),
    warning: Type.Union([Type.String(), Type.Null()], {
      description:
        "Something to look at while it runs, e.g. the source keeping too much WAL for the pipeline's slot, " +
        'or a table of the pipeline dropped at the source (see the table states of GET /v1/pipelines/{name}/progress)',
    }),
    events_per_second: Type.Number(),
    replication_lag_ms: Type.Integer({ description: LAG_DESCRIPTION }),
    replication_lag_bytes: LagBytes,
    retained_wal_bytes: RetainedWalBytes,
    last_checkpoint_at: LastCheckpointAt,
    generation: Type.Integer({ description: 'Incremented on every definition change' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Pipeline' },
);

export const PipelineForceQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Union([Type.Literal('true'), Type.Literal('false')], {
        description:
          'true deletes even when the replication slot cannot be dropped on the source; the answer names it',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The header of a forced delete's answer that names the replication slot left on the source. */
export const ORPHANED_SLOT_HEADER = 'x-orphaned-slot';

/** A pipeline definition's version as an entity tag: its generation, bumped by every replace. */
export const definitionTag = (generation: number) => `"${generation}"`;

/** The generation an `If-Match` names, `null` for `*` (any stored version); a tag not of ours names none (-1). */
export function matchedGeneration(ifMatch: string): number | null {
  if (ifMatch.trim() === '*') return null;
  const tag = /^\s*"(\d{1,15})"\s*$/.exec(ifMatch);
  return tag ? Number(tag[1]) : -1;
}

export const DefinitionTagHeaders = {
  etag: Type.String({
    description:
      "The definition's version (its generation, quoted): send it as `If-Match` with a PUT so that a change someone made meanwhile is not overwritten",
  }),
};

export const ReplaceHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'Replace only if the stored definition is still this version (the `ETag` of a read); otherwise 412 DEFINITION_CHANGED and nothing changes. `*` or no header: whatever is stored',
    }),
  ),
});
