import {
  type CommonQueryMethods,
  type DatabasePool,
  sql,
  UniqueIntegrityConstraintViolationError,
} from 'slonik';
import { parseDuration } from '../config/duration.js';
import type { ResolvedConnection } from '../connections/connections-service.js';
import type { RequestContext } from '../context.js';
import type { TableRef } from '../core/change.js';
import { AppError, notFound, validationFailed } from '../errors/app-error.js';
import { sameValue } from '../same-value.js';
import { findConnectionType, findSinkKind } from '../sinks/registry.js';
import { connectionsStore } from '../store/connections-store.js';
import { type PipelineDefinitionWrite, type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';
import { IDLE_STATS, type PipelineLiveStats, toPipelineSummary, toPipelineView } from './pipeline-view.js';
import { requirePipeline } from './require-pipeline.js';
import { refuseSharedTarget, type TargetWriter } from './shared-targets.js';
import { resolveSnapshotOptions, type SnapshotOptionsJson } from './snapshot-options.js';
import { resolveSourceSlot, type SourceSlot } from './source-slot.js';
import { parseTableName } from './table-name.js';

/** A pipeline definition as the API receives it (shape already checked by the route schema). */
export interface PipelineDefinitionInput {
  name?: string;
  source: { connection: string; tables: string[]; publication?: string; slot?: SourceSlot };
  sink: { connection: string; properties?: Record<string, string> };
  snapshot?: SnapshotOptionsJson;
  verify?: { interval?: string; source_share?: number };
  schema_policy?: 'review' | 'auto' | 'ignore';
}

/** A replication slot a forced delete left on its source (named in the answer and the connection's view). */
export interface OrphanedSlot {
  slot: string;
  connection: string;
}

/** What the runtime does when definitions change; without a runtime, nothing runs. */
export interface PipelineLifecycle {
  /** Live figures of a running pipeline. */
  stats(pipelineId: string): PipelineLiveStats;
  /** The stored definition changed: a running pipeline reloads it. */
  definitionChanged(pipelineId: string, generation: number): void;
  /**
   * Stops the pipeline and drops what it owns on its source; throws to refuse the deletion. Forced,
   * returns the replication slot it had to leave on the source, if any.
   */
  beforeDelete(pipelineId: string, force: boolean): Promise<OrphanedSlot | undefined>;
  /**
   * Refuses (422) a source that is reachable but cannot serve these tables, or a sink that is the
   * source's own tables. For an existing pipeline (`pipelineId`), a table it shows dropped is not refused.
   * `resolveConnection` finds the connections instead of the store (those of a document not yet
   * written). `unreachable` when the source could not be reached, and so was not judged.
   */
  checkDefinition(
    projectId: string,
    definition: PipelineDefinitionWrite,
    pipelineId?: string,
    resolveConnection?: ConnectionResolver,
  ): Promise<'checked' | 'unreachable'>;
}

/** A connection of a project by name, as the data plane connects with it. */
export type ConnectionResolver = (projectId: string, name: string) => Promise<ResolvedConnection>;

const idle: PipelineLifecycle = {
  stats: () => IDLE_STATS,
  definitionChanged: () => {},
  beforeDelete: async () => undefined,
  checkDefinition: async () => 'checked',
};

export class PipelinesService {
  constructor(
    private readonly pool: DatabasePool,
    /** What runs the pipelines; none (every pipeline idle) unless given. */
    private readonly lifecycle: PipelineLifecycle = idle,
  ) {}

  async list(ctx: RequestContext) {
    const rows = ctx.allProjects
      ? await pipelinesStore.listAll(this.pool)
      : await pipelinesStore.list(this.pool, ctx.projectId);
    return rows.map((row) => toPipelineSummary(row, this.lifecycle.stats(row.id)));
  }

  async get(ctx: RequestContext, name: string) {
    const row = await requirePipeline(this.pool, ctx, name);
    return toPipelineView(row, this.lifecycle.stats(row.id));
  }

  async create(ctx: RequestContext, name: string, input: PipelineDefinitionInput) {
    const definition = toWrite(input);
    await this.checkSource(ctx, definition);
    try {
      const row = await this.pool.transaction(async (tx) => {
        await checkConnections(tx, ctx, definition);
        await checkSharedTargets(tx, ctx, name, definition);
        return pipelinesStore.insert(tx, ctx.projectId, name, definition);
      });
      return toPipelineView(row, IDLE_STATS);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError('ALREADY_EXISTS', `pipeline '${name}' already exists`);
      }
      throw error;
    }
  }

  /**
   * Replaces the definition; a running pipeline picks it up (hot reload) through its generation.
   * With `expectedGeneration`, only while the stored definition is still that version (If-Match).
   */
  async replace(
    ctx: RequestContext,
    name: string,
    input: PipelineDefinitionInput,
    expectedGeneration: number | null = null,
  ) {
    const existing = await pipelinesStore.find(this.pool, ctx.projectId, name);
    if (!existing) throw notFound('pipeline', name);
    await this.checkSource(ctx, toWrite(input, existing), existing.id);
    const row = await this.pool.transaction(async (tx) => {
      const current = await pipelinesStore.find(tx, ctx.projectId, name);
      if (!current) throw notFound('pipeline', name);
      if (input.name !== undefined && input.name !== name) {
        throw validationFailed(
          'name',
          `must match the pipeline in the path ('${name}'); renaming is not supported`,
        );
      }
      const definition = toWrite(input, current);
      await checkConnections(tx, ctx, definition);
      await checkSharedTargets(tx, ctx, name, definition);
      const updated = await pipelinesStore.updateDefinition(
        tx,
        ctx.projectId,
        name,
        definition,
        expectedGeneration,
      );
      if (!updated && expectedGeneration !== null && (await pipelinesStore.find(tx, ctx.projectId, name)))
        throw new AppError(
          'DEFINITION_CHANGED',
          `pipeline '${name}' was changed since version ${expectedGeneration} (If-Match): read it again, then send the change`,
        );
      return updated;
    });
    if (!row) throw notFound('pipeline', name);
    this.lifecycle.definitionChanged(row.id, row.generation);
    return toPipelineView(row, this.lifecycle.stats(row.id));
  }

  // Runs outside any store transaction: it talks to the source over the network.
  private async checkSource(
    ctx: RequestContext,
    d: PipelineDefinitionWrite,
    pipelineId?: string,
  ): Promise<void> {
    // What the store alone can tell comes first, and is checked again under lock when written.
    await checkConnections(this.pool, ctx, d);
    await this.lifecycle.checkDefinition(ctx.projectId, d, pipelineId);
  }

  /**
   * Checks a definition as `create` (or, for the project's pipeline `name`, `replace`) would,
   * writing nothing and without reaching the source: the tables listed once, the slot mode, the
   * connections (looked up with `typeOf`) fit for their side.
   */
  async checkAgainst(
    ctx: RequestContext,
    name: string,
    input: PipelineDefinitionInput,
    typeOf: ConnectionTypeOf,
  ): Promise<void> {
    const existing = await pipelinesStore.find(this.pool, ctx.projectId, name);
    await checkReferences(toWrite(input, existing), typeOf);
  }

  /**
   * The checks `create` or `replace` run against the servers (source ready, tables and their keys,
   * privileges, sink preflight), writing nothing, with the connections `resolveConnection` gives.
   * A 422 on the field; `unreachable` when the source could not be reached (not a refusal).
   */
  async checkLive(
    ctx: RequestContext,
    name: string,
    input: PipelineDefinitionInput,
    resolveConnection: ConnectionResolver,
  ): Promise<'checked' | 'unreachable'> {
    const existing = await pipelinesStore.find(this.pool, ctx.projectId, name);
    return this.lifecycle.checkDefinition(
      ctx.projectId,
      toWrite(input, existing),
      existing?.id,
      resolveConnection,
    );
  }

  /** The project's pipelines as far as the tables they write go. */
  async targetWriters(ctx: RequestContext): Promise<TargetWriter[]> {
    return (await pipelinesStore.list(this.pool, ctx.projectId)).map(targetWriterOf);
  }

  /** The fields `replace` would change ([] when none), or null when there is no such pipeline. */
  async changes(ctx: RequestContext, name: string, input: PipelineDefinitionInput): Promise<string[] | null> {
    const row = await pipelinesStore.find(this.pool, ctx.projectId, name);
    return row ? changedFields(row, toWrite(input, row)) : null;
  }

  /**
   * Deletes a pipeline after stopping it and dropping its slot and publication on the source;
   * forced, returns the slot it had to leave there, if any.
   */
  async delete(ctx: RequestContext, name: string, force = false): Promise<OrphanedSlot | undefined> {
    const row = await requirePipeline(this.pool, ctx, name);
    const orphan = await this.lifecycle.beforeDelete(row.id, force);
    const result = await pipelinesStore.delete(this.pool, ctx.projectId, name);
    if (result.rowCount === 0) throw notFound('pipeline', name);
    return orphan;
  }
}

/**
 * The definition to store; `existing`, the stored pipeline it replaces (whose slot mode a
 * replacement keeps, and cannot change).
 */
function toWrite(input: PipelineDefinitionInput, existing?: PipelineRow | null): PipelineDefinitionWrite {
  const seen = new Set<string>();
  input.source.tables.forEach((table, i) => {
    if (seen.has(table)) throw validationFailed(`source.tables[${i}]`, `'${table}' is listed twice`);
    seen.add(table);
  });
  const sourcePublication = input.source.publication ?? null;
  return {
    sourceConnection: input.source.connection,
    sourceTables: input.source.tables,
    sourcePublication,
    sourceSlot: resolveSourceSlot(input.source.slot, sourcePublication, existing?.source_slot),
    sinkConnection: input.sink.connection,
    sinkProperties: input.sink.properties ?? {},
    snapshotOptions: input.snapshot ?? {},
    verifyOptions: verifyOptionsOf(input.verify),
    schemaPolicy: input.schema_policy ?? 'review',
  };
}

/** The shortest verification schedule: a verification reads every row of every table. */
const MIN_VERIFY_INTERVAL_MS = 60_000;

function verifyOptionsOf(
  verify: PipelineDefinitionInput['verify'],
): PipelineDefinitionWrite['verifyOptions'] {
  if (verify?.interval !== undefined) {
    const ms = parseDuration(verify.interval);
    if (ms === undefined)
      throw validationFailed('verify.interval', 'must be a duration such as 6h, 90m or 1d');
    if (ms < MIN_VERIFY_INTERVAL_MS) throw validationFailed('verify.interval', 'must be at least 1m');
  }
  return {
    ...(verify?.interval === undefined ? {} : { interval: verify.interval }),
    ...(verify?.source_share === undefined ? {} : { source_share: verify.source_share }),
  };
}

/** The type of a connection by name, or undefined when there is none. */
export type ConnectionTypeOf = (name: string) => Promise<string | undefined> | string | undefined;

/**
 * Checks the connections a definition names: they exist, can serve as source and sink, and the
 * sink takes the properties and tables. A 422 on the field.
 */
async function checkReferences(d: PipelineDefinitionWrite, typeOf: ConnectionTypeOf) {
  const sides = [
    { field: 'source.connection', name: d.sourceConnection, role: 'source' },
    { field: 'sink.connection', name: d.sinkConnection, role: 'sink' },
  ] as const;
  for (const side of sides) {
    const type = await typeOf(side.name);
    if (type === undefined) throw validationFailed(side.field, `connection '${side.name}' does not exist`);
    if (!findConnectionType(type)?.roles.includes(side.role)) {
      throw validationFailed(side.field, `a ${type} connection cannot be a pipeline ${side.role}`);
    }
    if (side.role === 'sink') {
      const kind = findSinkKind(type);
      kind?.parseProperties(d.sinkProperties);
      kind?.checkTables?.(
        d.sinkProperties,
        d.sourceTables.map((t) => parseTableName(t) as TableRef),
      );
    }
  }
}

// Locks the named connections (FOR SHARE) so a concurrent delete cannot slip between check and insert.
function checkConnections(tx: CommonQueryMethods, ctx: RequestContext, d: PipelineDefinitionWrite) {
  return checkReferences(
    d,
    async (name) => (await connectionsStore.find(tx, ctx.projectId, name, 'share'))?.type,
  );
}

/**
 * Refuses a definition that writes a table another pipeline of the project writes on the same
 * database. Serialised per project, so two such pipelines written at once cannot both pass.
 */
async function checkSharedTargets(
  tx: CommonQueryMethods,
  ctx: RequestContext,
  name: string,
  d: PipelineDefinitionWrite,
): Promise<void> {
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtext(${`pipeline-targets:${ctx.projectId}`}))`);
  const pipelines = await pipelinesStore.list(tx, ctx.projectId);
  const connections = new Map((await connectionsStore.list(tx, ctx.projectId)).map((c) => [c.name, c]));
  refuseSharedTarget(
    {
      name,
      sinkConnection: d.sinkConnection,
      sinkProperties: d.sinkProperties,
      sourceTables: d.sourceTables,
    },
    pipelines.map(targetWriterOf),
    (connection) => connections.get(connection),
  );
}

/** A stored pipeline as far as the tables it writes go. */
const targetWriterOf = (row: PipelineRow): TargetWriter => ({
  name: row.name,
  sinkConnection: row.sink_connection,
  sinkProperties: row.sink_properties,
  sourceTables: row.source_tables,
});

/** The fields of a stored definition that differ from a new one, by their API names. */
function changedFields(row: PipelineRow, d: PipelineDefinitionWrite): string[] {
  const fields: [string, unknown, unknown][] = [
    ['source.connection', row.source_connection, d.sourceConnection],
    ['source.tables', row.source_tables, d.sourceTables],
    ['source.publication', row.source_publication, d.sourcePublication],
    ['source.slot', row.source_slot, d.sourceSlot],
    ['sink.connection', row.sink_connection, d.sinkConnection],
    ['sink.properties', row.sink_properties, d.sinkProperties],
    // Compared as they take effect: an option left out is its default, as the API shows it.
    ['snapshot', resolveSnapshotOptions(row.snapshot_options), resolveSnapshotOptions(d.snapshotOptions)],
    ['verify', row.verify_options, d.verifyOptions],
    ['schema_policy', row.schema_policy, d.schemaPolicy],
  ];
  return fields.filter(([, stored, wanted]) => !sameValue(stored, wanted)).map(([field]) => field);
}
