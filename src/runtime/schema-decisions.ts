import type { DatabasePool } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError } from '../errors/app-error.js';
import type { LiveHub } from '../live/live-hub.js';
import { requirePipeline } from '../pipelines/require-pipeline.js';
import { pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { schemaStore } from '../store/schema-store.js';
import { messageOf } from './error-kinds.js';
import type { ReplicationRunner } from './replication-runner.js';
import { needsBackfill, sinkShapeOf } from './schema-guard.js';
import type { Supervisor } from './supervisor.js';

/** Reading and deciding the schema change a pipeline waits on. */
export class SchemaDecisions {
  constructor(
    private readonly pool: DatabasePool,
    private readonly runner: ReplicationRunner,
    private readonly supervisor: Supervisor,
    private readonly live: LiveHub,
  ) {}

  /** The schema change a pipeline waits on, or 404 when none. */
  async proposed(ctx: RequestContext, name: string) {
    const row = await requirePipeline(this.pool, ctx, name);
    const pending = await schemaStore.pending(this.pool, row.id);
    if (!pending)
      throw new AppError('NOT_FOUND', `pipeline '${name}' has no schema change waiting for review`);
    return pending;
  }

  /**
   * Decides on the pending schema change: `approve` runs its DDL on the sink and resumes with the
   * new shape; `reject` keeps the sink's shape (only its columns are written) and resumes.
   * `proposalId`, when given, must be the pending proposal's: 409 when it moved on.
   */
  async decide(ctx: RequestContext, name: string, decision: 'approve' | 'reject', proposalId?: string) {
    const row = await requirePipeline(this.pool, ctx, name);
    const state = this.supervisor.stateOf(row);
    const pending = await schemaStore.pending(this.pool, row.id);
    if (state !== 'pending_schema_approval' || !pending) {
      throw new AppError(
        'INVALID_TRANSITION',
        `pipeline '${name}' is ${state}: no schema change waits for review`,
      );
    }
    if (proposalId !== undefined && proposalId !== pending.id) {
      throw new AppError(
        'STALE_PROPOSAL',
        `the pending proposal is ${pending.id}, not ${proposalId}: read it again before deciding`,
        { pending: pending.id },
      );
    }
    const { current, proposed, ddl, changes } = pending.proposal;
    let skipped: string[] = [];
    if (decision === 'approve') {
      const shape = sinkShapeOf(current, proposed);
      ({ skipped } = await this.runner.applySchemaChange(row.id, shape, ddl).catch((error: unknown) => {
        throw new AppError('SCHEMA_CHANGE_FAILED', `the sink refused the change: ${messageOf(error)}`);
      }));
      await schemaStore.setKnown(this.pool, row.id, pending.table_name, shape);
      // Changes decided against before stay out of the sink: the source shape is still not followed whole.
      if (pending.proposal.source)
        await schemaStore.setSourceOnly(this.pool, row.id, pending.table_name, pending.proposal.source);
      // Rows already in the sink whose values for a new column cannot be known are copied again.
      if (needsBackfill(changes))
        await pipelineTablesStore.markBackfill(this.pool, row.id, [pending.table_name]);
    } else {
      await schemaStore.setSourceOnly(
        this.pool,
        row.id,
        pending.table_name,
        pending.proposal.source ?? proposed,
      );
    }
    const status = decision === 'approve' ? 'approved' : 'rejected';
    await schemaStore.decide(this.pool, pending.id, status, ctx.actor);
    await this.supervisor.relayDecision(row.id, decision);
    this.live.publish(row.project_id, {
      type: 'pipeline.schema',
      name,
      proposal_id: pending.id,
      status: 'decided',
    });
    return { ...pending, status, decided_by: ctx.actor, skipped };
  }
}
