import type { TableRef } from '../core/change.js';
import { SourceNotReadyError, TableNotReplicableError } from '../core/source-errors.js';
import { validationFailed } from '../errors/app-error.js';
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
  'sourceConnection' | 'sourceTables' | 'sinkConnection' | 'sinkProperties'
>;

/** How long a check waits for a server before it counts as unreachable. */
export const PREFLIGHT_CONNECT_TIMEOUT_MS = 3_000;

/**
 * Checks a definition before it is stored or started: the source's wal_level, replication rights
 * and every table's key, and that the sink is not the source's own tables. A source that cannot
 * be reached at all is not judged (it is checked again at start); any other problem is a 422
 * naming what to do. `rows` are the pipeline's tables as stored (none for a new pipeline): a
 * table shown dropped, or copied before and missing now, is left out rather than refused.
 */
export async function checkDefinition(
  endpoints: PipelineEndpoints,
  projectId: string,
  d: DefinitionToCheck,
  rows: readonly PipelineTableRow[] = [],
): Promise<void> {
  const connection = d.sourceConnection;
  const resolved = await endpoints.connection(projectId, connection, 'source.connection');
  const sink = await endpoints.connection(projectId, d.sinkConnection, 'sink.connection');
  // Properties and table mappings were checked when the definition was written; connections
  // may have changed since.
  const kind = endpoints.sinkKind(sink.type);
  const tables = d.sourceTables.map((t) => parseTableName(t) as TableRef);
  const source = endpoints.createSource(resolved);
  try {
    await source.connect({ timeoutMs: PREFLIGHT_CONNECT_TIMEOUT_MS });
  } catch (error) {
    await source.close();
    if (isUnreachable(error)) return;
    throw validationFailed('source.connection', `cannot connect to '${connection}': ${messageOf(error)}`);
  }
  try {
    await source.checkReady();
    const { schemas } = await describeKeptTables(source, tables, rows);
    await refuseOwnSourceAsSink(
      source,
      tables,
      { type: sink.type, connection: sink.settings, properties: d.sinkProperties },
      PREFLIGHT_CONNECT_TIMEOUT_MS,
    );
    await kind.preflight?.(sink.settings, d.sinkProperties, schemas, PREFLIGHT_CONNECT_TIMEOUT_MS);
  } catch (error) {
    if (error instanceof SourceNotReadyError) throw validationFailed('source.connection', error.message);
    if (error instanceof TableNotReplicableError) throw validationFailed('source.tables', error.message);
    throw error;
  } finally {
    await source.close();
  }
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
