import type { DatabasePool } from 'slonik';
import type { ResolvedConnection } from '../connections/connections-service.js';
import type { TableRef } from '../core/change.js';
import { nameRefusals } from '../core/side-refusal.js';
import type { BatchLimits, Sink, SinkKind } from '../core/sink.js';
import type { Source, SourceOptions } from '../core/source.js';
import { AppError, validationFailed } from '../errors/app-error.js';
import { parseTableName } from '../pipelines/table-name.js';
import { findSinkKind } from '../sinks/registry.js';
import { findSourceKind } from '../source/registry.js';
import { connectionsStore } from '../store/connections-store.js';
import { type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';
import { sinkStateStore } from '../store/sink-state-store.js';
import { readsSharedStream, sharedStreamName } from './shared-stream/shared-streams.js';

/** Resolves a connection name of a project to its type and the settings to connect with. */
export type ConnectionResolver = (projectId: string, name: string) => Promise<ResolvedConnection>;

/** What one start of the data plane works with: the definition as it is now, resolved. */
export interface Resolved {
  row: PipelineRow;
  source: ResolvedConnection;
  sink: ResolvedConnection;
  tables: TableRef[];
  /** The shared stream the pipeline reads (its slot's and publication's name); unset: its own. */
  stream?: string;
}

/**
 * A pipeline's definition turned into its source and its sink, through the source and sink
 * registries. A connection or type that cannot serve is a 422 on the field naming it.
 */
export class PipelineEndpoints {
  constructor(private readonly deps: { pool: DatabasePool; resolveConnection: ConnectionResolver }) {}

  /** The pipeline's definition as stored now, its connections resolved. */
  async resolve(pipelineId: string): Promise<Resolved> {
    const row = await pipelinesStore.findById(this.deps.pool, pipelineId);
    if (!row) throw new AppError('NOT_FOUND', `pipeline ${pipelineId} does not exist`);
    const source = await this.connection(row.project_id, row.source_connection, 'source.connection');
    const sink = await this.connection(row.project_id, row.sink_connection, 'sink.connection');
    const tables = row.source_tables.map((t) => parseTableName(t) as TableRef);
    const stream = await this.streamName(row);
    return { row, source, sink, tables, ...(stream ? { stream } : {}) };
  }

  /** The name of the shared stream the pipeline reads; undefined for one with a slot of its own. */
  async streamName(row: PipelineRow): Promise<string | undefined> {
    if (!readsSharedStream(row) || row.source_publication !== null) return undefined;
    const connection = await connectionsStore.find(this.deps.pool, row.project_id, row.source_connection);
    if (!connection)
      throw validationFailed('source.connection', `connection '${row.source_connection}' does not exist`);
    return sharedStreamName(connection.id);
  }

  /** A connection the definition names; a missing one is a 422 on the field that names it. */
  async connection(projectId: string, name: string, field: string): Promise<ResolvedConnection> {
    try {
      return await this.deps.resolveConnection(projectId, name);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') {
        throw validationFailed(field, `connection '${name}' does not exist`);
      }
      throw error;
    }
  }

  /** The source options a stored definition gives. */
  sourceOptions(row: PipelineRow, stream?: string): SourceOptions {
    if (row.source_publication !== null) return { publication: row.source_publication };
    return stream ? { stream } : {};
  }

  /** A session on the shared stream `stream` of a project's source connection, connected; a refusal names the connection. */
  async openStreamSource(projectId: string, sourceConnection: string, stream: string): Promise<Source> {
    const connection = await this.connection(projectId, sourceConnection, 'source.connection');
    return connected(nameRefusals(this.createSource(connection, { stream }), 'source', sourceConnection));
  }

  /** The pipeline's source as its definition shapes it, connected; a refusal names its connection. */
  async openPipelineSource(resolved: Resolved): Promise<Source> {
    return connected(
      nameRefusals(
        this.createSource(resolved.source, this.sourceOptions(resolved.row, resolved.stream)),
        'source',
        resolved.row.source_connection,
      ),
    );
  }

  /** A source on the connection, not yet connected. */
  createSource(connection: ResolvedConnection, options: SourceOptions = {}): Source {
    const kind = findSourceKind(connection.type);
    if (!kind)
      throw validationFailed('source.connection', `a ${connection.type} connection cannot be a source`);
    return kind.create(connection.settings, options);
  }

  /** A source on the connection, connected. */
  openSource(connection: ResolvedConnection, options: SourceOptions = {}): Promise<Source> {
    return connected(this.createSource(connection, options));
  }

  sinkKind(type: string): SinkKind {
    const kind = findSinkKind(type);
    if (!kind) throw validationFailed('sink.connection', `a ${type} connection cannot be a sink`);
    return kind;
  }

  /** The pipeline's sink, not yet opened; a refusal of its server names its connection. */
  createSink(resolved: Resolved): Sink {
    const kind = this.sinkKind(resolved.sink.type);
    kind.parseProperties(resolved.row.sink_properties);
    const sink = kind.create({
      pipelineId: resolved.row.id,
      connection: resolved.sink.settings,
      properties: resolved.row.sink_properties,
      state: sinkStateStore(this.deps.pool, resolved.row.id),
    });
    return nameRefusals(sink, 'sink', resolved.row.sink_connection);
  }

  batchLimits(resolved: Resolved): BatchLimits {
    return this.sinkKind(resolved.sink.type).parseProperties(resolved.row.sink_properties).batch;
  }
}

/** Connects `source`, closing it when that fails. */
export async function connected(source: Source, options?: { timeoutMs?: number }): Promise<Source> {
  try {
    await source.connect(options);
  } catch (error) {
    await source.close();
    throw error;
  }
  return source;
}
