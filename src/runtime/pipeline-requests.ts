import type { DatabasePool } from 'slonik';
import { PIPELINE_ACTIONS, type PipelineAction, type PipelineState } from '../../machines/pipeline.js';
import { ACTION_EVENTS, isActionAllowed, stateAfter } from '../../machines/pipeline-transitions.js';
import type { RequestContext } from '../context.js';
import type { OwnedObjects } from '../core/source.js';
import { SourceCleanupError } from '../core/source-errors.js';
import { AppError, badRequest } from '../errors/app-error.js';
import type { Logger } from '../log/logger.js';
import type { OrphanedSlot } from '../pipelines/pipelines-service.js';
import { requirePipeline } from '../pipelines/require-pipeline.js';
import { leasesStore } from '../store/leases-store.js';
import { orphanedSlotsStore } from '../store/orphaned-slots-store.js';
import { pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import type { ActionRelay } from './action-relay.js';
import { messageOf } from './error-kinds.js';
import type { PipelineActors } from './pipeline-actors.js';
import type { PipelineHandle } from './pipeline-handle.js';
import type { PipelinesView } from './pipeline-registry.js';
import type { ReplicationRunner } from './replication-runner.js';
import type { StateRecorder } from './state-recorder.js';

/**
 * Carries out what users ask of a pipeline: an action, a backfill, its deletion. Each is checked
 * against the pipeline's state and written to the store before its actor, here or on another
 * instance, is told.
 */
export class PipelineRequests {
  constructor(
    private readonly pool: DatabasePool,
    private readonly runner: ReplicationRunner,
    private readonly logger: Logger,
    private readonly fleet: { workerId: string; leaseTtlMs: number },
    private readonly handles: PipelinesView<PipelineHandle>,
    private readonly actors: PipelineActors,
    private readonly recorder: StateRecorder,
    private readonly relay: ActionRelay,
  ) {}

  /**
   * Applies a user's action; 409 INVALID_TRANSITION when the pipeline's state does not allow it.
   * Actions on one pipeline are taken one at a time in this process, and across instances the
   * stored state is compared and set: of concurrent requests only the first is carried out, the
   * others see the state it led to.
   */
  async requestAction(ctx: RequestContext, name: string, action: PipelineAction): Promise<PipelineState> {
    const { id } = await requirePipeline(this.pool, ctx, name);
    return this.actors.exclusive(id, () => this.takeAction(ctx, name, action));
  }

  /**
   * Resyncs a stopped or failed pipeline: a new slot, every table copied again (the sink's tables
   * emptied first), then streaming from the new slot; it starts at once. The pipeline, its run
   * history and its counters are kept. Taken like a start (one request at a time, the stored state
   * compared and set), with the resets written in the same transaction; the run drops the old
   * slot. 409 INVALID_TRANSITION for a pipeline in any other state: it must be stopped first.
   */
  async requestResync(ctx: RequestContext, name: string) {
    const { id } = await requirePipeline(this.pool, ctx, name);
    const state = await this.actors.exclusive(id, () => this.takeAction(ctx, name, 'start', true));
    const row = await requirePipeline(this.pool, ctx, name);
    return { name: row.name, tables: [...row.source_tables], state };
  }

  private async takeAction(
    ctx: RequestContext,
    name: string,
    action: PipelineAction,
    resync = false,
  ): Promise<PipelineState> {
    const row = await requirePipeline(this.pool, ctx, name);
    const handle = this.handles.get(row.id);
    // The stored state catches up with the actor's before it is compared.
    await handle?.writes;
    const state = handle?.state ?? (row.state as PipelineState);
    if (resync) {
      if (!RESYNC_FROM.includes(state)) throw resyncRefused(name, state);
    } else if (!isActionAllowed(state, action)) throw invalidTransition(name, state, action);
    if (action === 'start') {
      await this.runner.checkDefinition(
        row.project_id,
        {
          sourceConnection: row.source_connection,
          sourceTables: row.source_tables,
          sourcePublication: row.source_publication,
          sinkConnection: row.sink_connection,
          sinkProperties: row.sink_properties,
        },
        row.id,
      );
    }
    const accepted = resync
      ? await this.recorder.acceptResync(row.id, row.project_id, state)
      : await this.recorder.accept(row.id, state, action);
    if (!accepted) {
      const now = (await pipelinesStore.findById(this.pool, row.id))?.state as PipelineState | undefined;
      const why = 'another request changed it first';
      throw resync
        ? resyncRefused(name, now ?? state, why)
        : invalidTransition(name, now ?? state, action, why);
    }
    if (handle) {
      handle.send(ACTION_EVENTS[action]);
      return handle.state;
    }
    // Another live worker runs it: the action waits in the store for that worker to carry out.
    const epoch = await leasesStore.claim(this.pool, row.id, this.fleet.workerId, this.fleet.leaseTtlMs);
    if (epoch === null) {
      await this.relay.askOwner(row.id, action);
      // Accepted above: the answer is the state it moved to, as where it runs.
      return resync ? state : stateAfter(state, action);
    }
    const target = await this.actors.adopt(
      row,
      epoch,
      state === 'failed' || state === 'paused' ? state : 'stopped',
    );
    target.send(ACTION_EVENTS[action]);
    return target.state;
  }

  /**
   * Copies tables of a pipeline again. A streaming pipeline does it at once while its other tables
   * keep streaming; a failed one is started to do it; a stopped or paused one copies them at its
   * next start, before streaming.
   */
  async requestBackfill(ctx: RequestContext, name: string, tables: readonly string[]) {
    const row = await requirePipeline(this.pool, ctx, name);
    tables.forEach((table, i) => {
      if (!row.source_tables.includes(table)) {
        throw badRequest(`tables[${i}]`, `'${table}' is not a table of pipeline '${name}'`);
      }
    });
    const statuses = await pipelineTablesStore.list(this.pool, row.id);
    const copying = tables.filter((t) => {
      const status = statuses.find((s) => s.table_name === t)?.status;
      return status === 'snapshot' || (status === 'pending' && this.handles.get(row.id)?.state === 'running');
    });
    if (copying.length > 0) {
      throw new AppError(
        'INVALID_TRANSITION',
        `${copying.join(', ')} ${copying.length > 1 ? 'are' : 'is'} being copied already`,
      );
    }
    // A dropped table is copied again only once it exists at the source again.
    const dropped = tables.filter((t) => statuses.find((s) => s.table_name === t)?.status === 'dropped');
    if (dropped.length > 0) await this.runner.checkTablesBack(row.id, dropped);
    await pipelineTablesStore.markBackfill(this.pool, row.id, tables);
    await this.handles.get(row.id)?.control.backfill?.(tables);
    // A failed pipeline (a sink table changed behind its back, most of all) starts to copy them:
    // the backfill is the whole way back, not a first step before a start.
    if ((this.handles.get(row.id)?.state ?? row.state) === 'failed') {
      const state = await this.requestAction(ctx, name, 'start');
      return { name: row.name, tables: [...tables], state };
    }
    return { name: row.name, tables: [...tables], state: this.handles.get(row.id)?.state ?? row.state };
  }

  /**
   * Before a deletion: stops the pipeline and drops its slot and publication on the source. When
   * they cannot be dropped the pipeline is kept, stopped (409 SLOT_NOT_DROPPED), unless `force`:
   * then the slot left behind is logged and recorded for the source connection's view, and
   * returned for the answer to name.
   */
  async beforeDelete(pipelineId: string, force: boolean): Promise<OrphanedSlot | undefined> {
    await this.actors.forget(pipelineId);
    if (await leasesStore.heldElsewhere(this.pool, pipelineId, this.fleet.workerId)) {
      await this.recorder.keepStopped(pipelineId);
      await this.relay.askOwner(pipelineId, 'stop');
      const deadline = Date.now() + 2 * this.fleet.leaseTtlMs;
      while (
        Date.now() < deadline &&
        (await leasesStore.heldElsewhere(this.pool, pipelineId, this.fleet.workerId))
      ) {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    try {
      await this.runner.dropSourceObjects(pipelineId);
      return undefined;
    } catch (error) {
      const row = await pipelinesStore.findById(this.pool, pipelineId);
      const owned = error instanceof SourceCleanupError ? error.owned : undefined;
      const reason = messageOf(error);
      if (force) return this.leaveBehind(pipelineId, row, owned, reason);
      await this.recorder.keepStopped(pipelineId);
      await this.recorder.stoppedBecause(pipelineId, reason);
      const source = row ? ` of connection '${row.source_connection}'` : '';
      const byHand = owned ? ` (then drop the slot yourself: ${owned.dropByHand})` : '';
      throw new AppError(
        'SLOT_NOT_DROPPED',
        `${reason}${source}; the pipeline is kept, stopped, so that the slot does not hold the source's WAL ` +
          `unnoticed. Retry when the source is reachable, or delete with ?force=true${byHand}`,
      );
    }
  }

  /** A forced delete's slot that could not be dropped: logged and recorded, never silently forgotten. */
  private async leaveBehind(
    pipelineId: string,
    row: { project_id: string; name: string; source_connection: string } | null,
    owned: OwnedObjects | undefined,
    reason: string,
  ): Promise<OrphanedSlot | undefined> {
    // The message names hosts at most: connection errors never carry the DSN's password.
    this.logger.warn(
      {
        pipeline: row?.name,
        connection: row?.source_connection,
        slot: owned?.slot,
        drop_statement: owned?.dropByHand,
        reason,
      },
      owned
        ? `deleted a pipeline whose ${owned.what} could not be dropped: drop it by hand on the source with ${owned.dropByHand}`
        : 'deleted a pipeline whose source objects could not be dropped or named',
    );
    if (!row || !owned) return undefined;
    await orphanedSlotsStore.record(this.pool, row.project_id, {
      connection: row.source_connection,
      slot: owned.slot,
      pipelineId,
      pipelineName: row.name,
      reason,
      dropStatement: owned.dropByHand,
    });
    return { slot: owned.slot, connection: row.source_connection };
  }
}

function invalidTransition(
  name: string,
  state: PipelineState,
  action: PipelineAction,
  why?: string,
): AppError {
  const allowed = PIPELINE_ACTIONS.filter((a) => isActionAllowed(state, a));
  return new AppError(
    'INVALID_TRANSITION',
    `pipeline '${name}' is ${state}${why ? ` (${why})` : ''}: cannot ${action} it (allowed: ${allowed.join(', ') || 'none'})`,
    { state, action, allowed },
  );
}

/** The states a resync is taken in: the data plane is not running, so the slot is free to drop. */
const RESYNC_FROM: readonly PipelineState[] = ['stopped', 'failed'];

function resyncRefused(name: string, state: PipelineState, why?: string): AppError {
  const first =
    state === 'paused'
      ? 'resume it, then stop it'
      : state === 'starting' || state === 'stopping'
        ? 'wait until it is running or stopped, and stop it'
        : 'stop it';
  return new AppError(
    'INVALID_TRANSITION',
    `pipeline '${name}' is ${state}${why ? ` (${why})` : ''}: a resync copies every table again from a new ` +
      `slot and is taken only when the pipeline is stopped or failed; ${first} first`,
    { state, action: 'resync', allowed: PIPELINE_ACTIONS.filter((a) => isActionAllowed(state, a)) },
  );
}
