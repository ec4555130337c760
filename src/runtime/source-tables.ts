import type { RequestContext } from '../context.js';
import { AppError, validationFailed } from '../errors/app-error.js';
import { messageOf } from './error-kinds.js';
import type { ConnectionResolver, PipelineEndpoints } from './pipeline-endpoints.js';

/** How long listing waits for the source before it answers 502. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * The tables of a source connection, for a person choosing what a pipeline replicates: each with
 * whether it can be replicated, and if not why and what to do.
 */
export class SourceTables {
  constructor(
    private readonly endpoints: PipelineEndpoints,
    private readonly resolveConnection: ConnectionResolver,
  ) {}

  async list(ctx: RequestContext, name: string) {
    const connection = await this.resolveConnection(ctx.projectId, name);
    let source: ReturnType<PipelineEndpoints['createSource']>;
    try {
      source = this.endpoints.createSource(connection);
    } catch {
      throw validationFailed('name', `a ${connection.type} connection cannot be a source`);
    }
    try {
      await source.connect({ timeoutMs: CONNECT_TIMEOUT_MS });
      const tables = await source.listTables();
      return tables.map((t) => ({
        table: `${t.table.schema}.${t.table.table}`,
        replicable: t.replicable,
        reason: t.reason,
        estimated_rows: t.estimatedRows,
      }));
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError('SOURCE_UNAVAILABLE', `cannot list the tables of '${name}': ${messageOf(error)}`);
    } finally {
      await source.close();
    }
  }
}
