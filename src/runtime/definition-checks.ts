import type { TableRef } from '../core/change.js';
import { isRefusal, SideRefusalError } from '../core/side-refusal.js';
import {
  PublicationUnfitError,
  SourceNotReadyError,
  TableNotReplicableError,
} from '../core/source-errors.js';
import { AppError, validationFailed } from '../errors/app-error.js';
import { parseTableName } from '../pipelines/table-name.js';
import type { PipelineTableRow } from '../store/pipeline-tables-store.js';
import type { PipelineDefinitionWrite } from '../store/pipelines-store.js';
import { describeKeptTables } from './dropped-tables.js';
import { messageOf } from './error-kinds.js';
import { refuseOwnSourceAsSink } from './own-source-guard.js';
import type { PipelineEndpoints } from './pipeline-endpoints.js';

/** The parts of a definition that are checked against the servers before it is stored or started. */
export type DefinitionToCheck = Pick<
  PipelineDefinitionWrite,
  'sourceConnection' | 'sourceTables' | 'sourcePublication' | 'sinkConnection' | 'sinkProperties'
>;

/** What a check could judge: `unreachable` when the source could not be reached, so nothing was checked. */
export type DefinitionCheckOutcome = 'checked' | 'unreachable';

/** How long a check waits for a server before it counts as unreachable. */
export const PREFLIGHT_CONNECT_TIMEOUT_MS = 3_000;

/**
 * Checks a definition before it is stored or started: the source's wal_level, replication rights,
 * every table's key, the source role's privileges (or the publication the definition names), and
 * that the sink is not the source's own tables. A source that cannot be reached at all is not
 * judged (it is checked again at start); any other problem is a 422 naming the connection and
 * what to do. `rows` are the pipeline's tables as stored (none for a new pipeline): a table shown
 * dropped, or copied before and missing now, is left out rather than refused. `pipelineId` for a
 * pipeline that exists, whose own publication may exist already. A refusal of tables keeps the
 * TableNotReplicableError as its `cause`, which names each table.
 */
export async function checkDefinition(
  endpoints: PipelineEndpoints,
  projectId: string,
  d: DefinitionToCheck,
  rows: readonly PipelineTableRow[] = [],
  pipelineId?: string,
): Promise<DefinitionCheckOutcome> {
  const connection = d.sourceConnection;
  const resolved = await endpoints.connection(projectId, connection, 'source.connection');
  const sink = await endpoints.connection(projectId, d.sinkConnection, 'sink.connection');
  // Properties and table mappings were checked when the definition was written; connections
  // may have changed since.
  const kind = endpoints.sinkKind(sink.type);
  const tables = d.sourceTables.map((t) => parseTableName(t) as TableRef);
  const source = endpoints.createSource(
    resolved,
    d.sourcePublication === null ? {} : { publication: d.sourcePublication },
  );
  try {
    await source.connect({ timeoutMs: PREFLIGHT_CONNECT_TIMEOUT_MS });
  } catch (error) {
    await source.close();
    if (isUnreachable(error)) return 'unreachable';
    if (isRefusal(error)) {
      throw validationFailed('source.connection', new SideRefusalError('source', connection, error).message);
    }
    throw validationFailed(
      'source.connection',
      `cannot connect to source connection '${connection}': ${messageOf(error)}`,
    );
  }
  try {
    await source.checkReady();
    const { schemas } = await describeKeptTables(source, tables, rows);
    await source.checkAccess(schemas, pipelineId);
    await refuseOwnSourceAsSink(
      source,
      tables,
      { type: sink.type, connection: sink.settings, properties: d.sinkProperties },
      PREFLIGHT_CONNECT_TIMEOUT_MS,
    );
    await kind
      .preflight?.(sink.settings, d.sinkProperties, schemas, PREFLIGHT_CONNECT_TIMEOUT_MS)
      .catch((error: unknown) => {
        if (!isRefusal(error)) throw error;
        throw validationFailed(
          'sink.connection',
          new SideRefusalError('sink', d.sinkConnection, error).message,
        );
      });
  } catch (error) {
    if (error instanceof PublicationUnfitError) {
      throw validationFailed('source.publication', error.forConnection(connection).message);
    }
    if (error instanceof SourceNotReadyError) {
      throw validationFailed('source.connection', error.forConnection(connection).message);
    }
    if (error instanceof TableNotReplicableError) {
      throw new AppError(
        'VALIDATION_FAILED',
        `source.tables: ${error.message}`,
        { field: 'source.tables' },
        { cause: error },
      );
    }
    throw error;
  } finally {
    await source.close();
  }
  return 'checked';
}

// Network-level failures: the server may simply be down for now, which says nothing about the definition.
function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return (
    [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ECONNRESET',
    ].includes(String(code)) || /timeout/i.test(messageOf(error))
  );
}
