import type { DatabasePool } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, notFound } from '../errors/app-error.js';
import { orphanedSlotsStore } from '../store/orphaned-slots-store.js';
import { messageOf } from './error-kinds.js';
import type { ConnectionResolver, PipelineEndpoints } from './pipeline-endpoints.js';
import { isSharedStreamName } from './shared-stream/shared-streams.js';

/** How long dropping waits for the source before it answers 409. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * The replication slots forced pipeline deletes left on a source connection: dropped on request
 * (with the deleted pipeline's publication), and forgotten once dropped or found gone already.
 */
export class OrphanedSlots {
  constructor(
    private readonly pool: DatabasePool,
    private readonly endpoints: PipelineEndpoints,
    private readonly resolveConnection: ConnectionResolver,
  ) {}

  /**
   * Drops orphaned slot `slot` of connection `name` on its source and forgets it: 404 when the
   * connection does not list it, 409 SLOT_NOT_DROPPED (the record kept) when the source refuses.
   */
  async drop(ctx: RequestContext, name: string, slot: string): Promise<void> {
    const connection = await this.resolveConnection(ctx.projectId, name);
    const orphan = await orphanedSlotsStore.find(this.pool, ctx.projectId, name, slot);
    if (!orphan) throw notFound(`orphaned slot of connection '${name}'`, slot);
    // A shared stream's slot is dropped with the stream's publication, not a pipeline's.
    const source = this.endpoints.createSource(connection, isSharedStreamName(slot) ? { stream: slot } : {});
    try {
      await source.connect({ timeoutMs: CONNECT_TIMEOUT_MS });
      // Idempotent: a slot someone dropped by hand is simply gone.
      await source.dropOwned(orphan.pipeline_id);
    } catch (error) {
      throw new AppError(
        'SLOT_NOT_DROPPED',
        `could not drop replication slot '${slot}' on the source of connection '${name}' (${messageOf(error)}); ` +
          `retry when the source is reachable, or drop it by hand: ${orphan.drop_statement}`,
      );
    } finally {
      await source.close();
    }
    await orphanedSlotsStore.forget(this.pool, ctx.projectId, name, slot);
  }
}
