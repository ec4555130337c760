import { randomUUID } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import { type Actor, createActor, fromCallback, fromPromise } from 'xstate';
import {
  PIPELINE_ACTIONS,
  type PipelineAction,
  type PipelineEvent,
  type PipelineState,
  type PrepareFailure,
  pipelineMachine,
} from '../../machines/pipeline.js';
import { ACTION_EVENTS, apiState, isActionAllowed, stateAfter } from '../../machines/pipeline-transitions.js';
import type { RequestContext } from '../context.js';
import { AppError, validationFailed } from '../errors/app-error.js';
import { LiveHub } from '../live/live-hub.js';
import type { Logger } from '../log/logger.js';
import { IDLE_STATS, type PipelineLiveStats } from '../pipelines/pipeline-view.js';
import type { PipelineLifecycle } from '../pipelines/pipelines-service.js';
import { requirePipeline } from '../pipelines/require-pipeline.js';
import { slotName } from '../source/postgres/slot.js';
import { leasesStore } from '../store/leases-store.js';
import { pipelineTablesStore } from '../store/pipeline-tables-store.js';
import { type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';
import { runsStore } from '../store/runs-store.js';
import { isRetryable, messageOf } from './error-kinds.js';
import { etaSeconds, PipelineStats, percentOf } from './pipeline-stats.js';
import type { DefinitionToCheck, ReplicationRunner, RunControl } from './replication-runner.js';

/** How often live counters are written to the store. */
const PERSIST_INTERVAL_MS = 1_000;

const DESIRED: Record<PipelineAction, 'running' | 'paused' | 'stopped'> = {
  start: 'running',
  resume: 'running',
  pause: 'paused',
  stop: 'stopped',
};

/** One pipeline this process runs: its actor, its data-plane loop and its live figures. */
interface Handle {
  id: string;
  name: string;
  projectId: string;
  actor: Actor<typeof pipelineMachine>;
  stats: PipelineStats;
  /** The current (or last) data-plane loop; a new one starts only after it settled. */
  loop: Promise<void>;
  runId: string | null;
  state: PipelineState;
  error: string | null;
  /** Reaches into the running data plane (and carries the lease's fencing epoch). */
  control: RunControl;
  /** The definition generation the data plane runs with. */
  generation: number;
  /** Store writes of this pipeline, in order. */
  writes: Promise<unknown>;
}

/**
 * Owns the actor of every pipeline this process runs. State changes are written to the store
 * (the record of truth) before the actor is told, and every state the actor reaches is
 * persisted; at start, pipelines are brought back to the state their users left them in.
 */
export class Supervisor implements PipelineLifecycle {
  private readonly handles = new Map<string, Handle>();
  /** The tail of each pipeline's queue of actions and take-overs in this process. */
  private readonly queues = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  /** Called with the figures of each pipeline this process takes on (metrics attach here). */
  onStats?: (pipeline: { id: string; name: string; projectId: string }, stats: PipelineStats) => void;

  constructor(
    private readonly pool: DatabasePool,
    private readonly runner: ReplicationRunner,
    private readonly logger: Logger,
    private readonly hub: LiveHub = new LiveHub(),
    /** This worker, and how long its leases last without renewal. */
    readonly fleet: { workerId: string; leaseTtlMs: number } = { workerId: randomUUID(), leaseTtlMs: 15_000 },
  ) {}

  /** Starts the periodic work: progress to the store, live figures to the feed. */
  async start(): Promise<void> {
    this.timer = setInterval(() => {
      void this.persistProgress();
      this.publishStats();
    }, PERSIST_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops every loop (leaving desired states as they are, so the next start restores them). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const handles = [...this.handles.values()];
    for (const h of handles) h.actor.stop();
    await Promise.all(handles.map((h) => h.loop));
    await this.persistProgress();
    for (const h of handles) {
      if (h.runId) await runsStore.close(this.pool, h.runId, 'shutdown', null).catch(() => undefined);
      await h.writes;
      // Another instance, or this one restarted, can take it on at once rather than after the lease runs out.
      await leasesStore.release(this.pool, h.id, this.fleet.workerId).catch(() => undefined);
    }
    this.handles.clear();
  }

  /** The pipelines this process runs, with their state and figures, for metrics. */
  running(): { id: string; name: string; projectId: string; state: PipelineState; stats: PipelineStats }[] {
    return [...this.handles.values()].map(({ id, name, projectId, state, stats }) => ({
      id,
      name,
      projectId,
      state,
      stats,
    }));
  }

  /** Live figures, state and last checkpoint of a pipeline this process runs; idle for others. */
  stats(pipelineId: string): PipelineLiveStats {
    const handle = this.handles.get(pipelineId);
    if (!handle) return IDLE_STATS;
    return {
      ...handle.stats.live(),
      current: { state: handle.state, error: handle.error, lastCheckpointAt: handle.stats.lastCheckpointAt },
    };
  }

  statsOf(pipelineId: string): PipelineStats | undefined {
    return this.handles.get(pipelineId)?.stats;
  }

  /**
   * Applies a user's action; 409 INVALID_TRANSITION when the pipeline's state does not allow it.
   * Actions on one pipeline are taken one at a time in this process, and across instances the
   * stored state is compared and set: of concurrent requests only the first is carried out, the
   * others see the state it led to.
   */
  async requestAction(ctx: RequestContext, name: string, action: PipelineAction): Promise<PipelineState> {
    const { id } = await requirePipeline(this.pool, ctx, name);
    return this.exclusive(id, () => this.takeAction(ctx, name, action));
  }

  private async takeAction(
    ctx: RequestContext,
    name: string,
    action: PipelineAction,
  ): Promise<PipelineState> {
    const row = await requirePipeline(this.pool, ctx, name);
    const handle = this.handles.get(row.id);
    // The stored state catches up with the actor's before it is compared.
    await handle?.writes;
    const state = handle?.state ?? (row.state as PipelineState);
    if (!isActionAllowed(state, action)) throw invalidTransition(name, state, action);
    if (action === 'start') {
      await this.runner.checkDefinition(row.project_id, {
        sourceConnection: row.source_connection,
        sourceTables: row.source_tables,
        sinkConnection: row.sink_connection,
        sinkProperties: row.sink_properties,
      });
    }
    if (
      !(await pipelinesStore.transition(this.pool, row.id, state, stateAfter(state, action), DESIRED[action]))
    ) {
      const now = (await pipelinesStore.findById(this.pool, row.id))?.state as PipelineState | undefined;
      throw invalidTransition(name, now ?? state, action, 'another request changed it first');
    }
    if (handle) {
      handle.actor.send(ACTION_EVENTS[action]);
      return handle.state;
    }
    // Another live worker runs it: the action waits in the store for that worker to carry out.
    const epoch = await leasesStore.claim(this.pool, row.id, this.fleet.workerId, this.fleet.leaseTtlMs);
    if (epoch === null) {
      await leasesStore.requestAction(this.pool, row.id, action);
      return state;
    }
    const target = await this.adopt(row, epoch, state === 'failed' || state === 'paused' ? state : 'stopped');
    target.actor.send(ACTION_EVENTS[action]);
    return target.state;
  }

  /**
   * Copies tables of a pipeline again. A streaming pipeline does it at once while its other tables
   * keep streaming; any other copies them at its next start, before streaming.
   */
  async requestBackfill(ctx: RequestContext, name: string, tables: readonly string[]) {
    const row = await requirePipeline(this.pool, ctx, name);
    tables.forEach((table, i) => {
      if (!row.source_tables.includes(table)) {
        throw validationFailed(`tables[${i}]`, `'${table}' is not a table of pipeline '${name}'`);
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
    await pipelineTablesStore.markBackfill(this.pool, row.id, tables);
    await this.handles.get(row.id)?.control.backfill?.(tables);
    return { name: row.name, tables: [...tables], state: this.handles.get(row.id)?.state ?? row.state };
  }

  /** The state of a pipeline as this instance knows it: its actor's when it runs here, else the stored one. */
  stateOf(row: PipelineRow): PipelineState {
    return this.handles.get(row.id)?.state ?? (row.state as PipelineState);
  }

  /** Hands a schema decision to the pipeline: to its actor here, or through the store to its owner. */
  async relayDecision(pipelineId: string, decision: 'approve' | 'reject'): Promise<void> {
    const handle = this.handles.get(pipelineId);
    if (handle) handle.actor.send({ type: decision === 'approve' ? 'APPROVE' : 'REJECT' });
    else await leasesStore.requestAction(this.pool, pipelineId, decision);
  }

  /** The definition of a pipeline changed: a running one restarts its data plane with it. */
  definitionChanged(pipelineId: string, generation?: number): void {
    const handle = this.handles.get(pipelineId);
    if (handle && generation !== undefined) handle.generation = generation;
    if (handle?.state === 'running') handle.actor.send({ type: 'RELOAD' });
  }

  /** Before a deletion: stops the pipeline and drops its slot and publication on the source. */
  async beforeDelete(pipelineId: string, force: boolean): Promise<void> {
    await this.forget(pipelineId);
    if (await leasesStore.heldElsewhere(this.pool, pipelineId, this.fleet.workerId)) {
      await pipelinesStore.setDesiredState(this.pool, pipelineId, 'stopped');
      await leasesStore.requestAction(this.pool, pipelineId, 'stop');
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
    } catch (error) {
      const slot = slotName(pipelineId);
      if (force) {
        this.logger.warn({ err: error, slot }, 'deleted a pipeline whose slot could not be dropped');
        return;
      }
      await pipelinesStore.setDesiredState(this.pool, pipelineId, 'stopped');
      await pipelinesStore.setState(this.pool, pipelineId, 'stopped', messageOf(error));
      throw new AppError(
        'SOURCE_UNAVAILABLE',
        `could not drop replication slot '${slot}' on the source (${messageOf(error)}); the pipeline is kept, ` +
          `stopped, so that the slot does not hold the source's WAL unnoticed. Retry, or delete with ?force=true ` +
          `and drop the slot yourself: SELECT pg_drop_replication_slot('${slot}')`,
      );
    }
  }

  checkDefinition(projectId: string, definition: DefinitionToCheck): Promise<void> {
    return this.runner.checkDefinition(projectId, definition);
  }

  /**
   * A connection under running pipelines was replaced or deleted: they restart their data plane,
   * with the new DSN, or failing with a message naming the missing connection.
   */
  connectionChanged(projectId: string, pipelineNames: readonly string[]): void {
    for (const handle of this.handles.values()) {
      if (handle.projectId === projectId && pipelineNames.includes(handle.name))
        this.definitionChanged(handle.id);
    }
  }

  /** Stops a pipeline's loop and forgets it (before its deletion). */
  async forget(pipelineId: string): Promise<void> {
    const handle = this.handles.get(pipelineId);
    if (!handle) return;
    handle.actor.stop();
    await handle.loop;
    if (handle.runId) await runsStore.close(this.pool, handle.runId, 'deleted', null).catch(() => undefined);
    await handle.writes;
    this.handles.delete(pipelineId);
  }

  /**
   * Takes on a pipeline whose lease this worker just won (`epoch`), its actor starting in
   * `resumeAs`. Runs left open by a worker that died are closed as interrupted.
   */
  async adopt(
    row: PipelineRow,
    epoch: number,
    resumeAs: 'stopped' | 'running' | 'paused' | 'failed',
  ): Promise<Handle> {
    // A pipeline that already has an actor here keeps it: two would run two data planes on one slot.
    const existing = this.handles.get(row.id);
    if (existing) return existing;
    // Closed before the actor opens a run of its own, which this must not close too.
    await runsStore.closeAbandoned(this.pool, row.id).catch(() => undefined);
    return this.handles.get(row.id) ?? this.spawn(row, epoch, resumeAs);
  }

  /**
   * Claims and takes on a pipeline that should run and has no live owner, unless this process
   * runs it already or a request on it is under way here. False when another worker holds it.
   */
  takeOver(pipelineId: string): Promise<boolean> {
    return this.exclusive(pipelineId, async () => {
      if (this.handles.has(pipelineId)) return true;
      const epoch = await leasesStore.claim(
        this.pool,
        pipelineId,
        this.fleet.workerId,
        this.fleet.leaseTtlMs,
      );
      if (epoch === null) return false;
      const row = await pipelinesStore.findById(this.pool, pipelineId);
      if (!row || row.desired_state === 'stopped') {
        await leasesStore.release(this.pool, pipelineId, this.fleet.workerId);
        return false;
      }
      this.logger.info({ pipeline: row.name, epoch }, 'took on the pipeline');
      await this.adopt(
        row,
        epoch,
        row.state === 'failed' ? 'failed' : (row.desired_state as 'running' | 'paused'),
      );
      return true;
    });
  }

  /** Runs `work` after every earlier call for the same pipeline settled. */
  private exclusive<T>(pipelineId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(pipelineId) ?? Promise.resolve();
    const result = previous.then(work);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(pipelineId, settled);
    void settled.then(() => {
      if (this.queues.get(pipelineId) === settled) this.queues.delete(pipelineId);
    });
    return result;
  }

  /** The pipelines this worker holds. */
  ownedIds(): string[] {
    return [...this.handles.keys()];
  }

  /** Lets go of pipelines whose lease this worker lost: their actors stop, recording nothing. */
  async drop(pipelineIds: readonly string[]): Promise<void> {
    for (const id of pipelineIds) {
      const handle = this.handles.get(id);
      if (!handle) continue;
      this.logger.warn({ pipeline: handle.name }, 'lost the lease of the pipeline; another worker takes it');
      this.handles.delete(id);
      handle.actor.stop();
      await handle.loop;
    }
  }

  /** Carries out an action left in the store by another instance. */
  deliver(pipelineId: string, action: string): void {
    const handle = this.handles.get(pipelineId);
    const event =
      action === 'approve'
        ? ({ type: 'APPROVE' } as const)
        : action === 'reject'
          ? ({ type: 'REJECT' } as const)
          : ACTION_EVENTS[action as PipelineAction];
    if (handle && event && handle.actor.getSnapshot().can(event)) handle.actor.send(event);
  }

  /** Follows what other instances changed in the store: definitions (hot reload) and backfills asked for. */
  async reconcile(): Promise<void> {
    if (this.handles.size === 0) return;
    for (const row of await pipelinesStore.followUps(this.pool, [...this.handles.keys()])) {
      const handle = this.handles.get(row.id);
      if (!handle) continue;
      if (row.generation !== handle.generation) this.definitionChanged(handle.id, row.generation);
      if (row.backfill.length > 0) await handle.control.backfill?.(row.backfill);
    }
  }

  private spawn(
    row: PipelineRow,
    epoch: number,
    resumeAs: 'stopped' | 'running' | 'paused' | 'failed',
  ): Handle {
    const handle = {
      id: row.id,
      name: row.name,
      projectId: row.project_id,
      stats: Object.assign(new PipelineStats(), { lastCheckpointAt: row.last_checkpoint_at }),
      loop: Promise.resolve(),
      runId: null,
      state: 'stopped',
      error: row.error,
      control: { epoch },
      generation: row.generation,
      writes: Promise.resolve(),
    } as unknown as Handle;
    const log = this.logger.child({ pipeline: row.name });
    const machine = pipelineMachine.provide({
      actors: {
        prepare: fromPromise(() =>
          this.runner.prepare(row.id).catch((error: unknown) => {
            log.warn({ err: error }, 'could not prepare the pipeline');
            throw { message: messageOf(error), retryable: isRetryable(error) } satisfies PrepareFailure;
          }),
        ),
        replicate: fromCallback(({ sendBack }) => {
          const controller = new AbortController();
          const report = (event: PipelineEvent) => {
            if (!controller.signal.aborted) sendBack(event);
          };
          let progressed = false;
          handle.stats.onProgress = () => {
            if (progressed) return;
            progressed = true;
            report({ type: 'PROGRESS' });
          };
          handle.loop = handle.loop
            .then(() => {
              if (controller.signal.aborted) return;
              return this.runner.run(
                row.id,
                handle.stats,
                controller.signal,
                (phase) => report({ type: 'PHASE', phase }),
                handle.control,
              );
            })
            .then(
              (outcome) =>
                report(
                  outcome === 'held-for-schema'
                    ? { type: 'SCHEMA_CHANGE' }
                    : { type: 'FAILED', message: 'the change stream ended unexpectedly', retryable: true },
                ),
              (error: unknown) => {
                if (controller.signal.aborted) return;
                log.warn({ err: error }, 'replication failed');
                report({ type: 'FAILED', message: messageOf(error), retryable: isRetryable(error) });
              },
            );
          return () => controller.abort();
        }),
        drain: fromPromise(() => handle.loop),
      },
    });
    handle.actor = createActor(machine, { input: { pipelineId: row.id, resumeAs, error: row.error } });
    handle.actor.subscribe((snapshot) => {
      const state = apiState(snapshot.value);
      // A retried failure changes the error without changing the state: both are shown, both are kept.
      if (state === handle.state && snapshot.context.error === handle.error) return;
      const previous = handle.state;
      handle.state = state;
      handle.error = snapshot.context.error;
      if (state !== 'running' && state !== 'pending_schema_approval') handle.stats.phase = 'idle';
      this.persistState(handle, previous, state, snapshot.context.error);
    });
    this.handles.set(row.id, handle);
    this.onStats?.({ id: row.id, name: row.name, projectId: row.project_id }, handle.stats);
    handle.actor.start();
    handle.state = apiState(handle.actor.getSnapshot().value);
    // An actor born stopped is about to be given an action whose state is stored already.
    if (handle.state !== 'stopped') {
      this.persistState(handle, 'stopped', handle.state, handle.actor.getSnapshot().context.error);
    }
    return handle;
  }

  private publishStats(): void {
    for (const handle of this.handles.values()) {
      if (!this.hub.watched(handle.projectId)) continue;
      const live = handle.stats.live();
      const copying = [...handle.stats.tables]
        .filter(([, t]) => t.partitionsDone < t.partitionsTotal)
        .map(([table, t]) => ({
          table,
          partitions_total: t.partitionsTotal,
          partitions_done: t.partitionsDone,
          rows_total: Math.max(t.rowsTotal, t.rowsDone),
          rows_done: t.rowsDone,
          percent: percentOf(t.rowsDone, t.rowsTotal),
          eta_seconds: etaSeconds(t),
        }));
      this.hub.publish(handle.projectId, {
        type: 'pipeline.stats',
        name: handle.name,
        state: handle.state,
        phase: handle.stats.phase,
        events_per_second: live.eventsPerSecond,
        replication_lag_ms: live.replicationLagMs,
        last_checkpoint_at: handle.stats.lastCheckpointAt,
        copying,
      });
    }
  }

  private persistState(
    handle: Handle,
    previous: PipelineState,
    state: PipelineState,
    error: string | null,
  ): void {
    this.hub.publish(handle.projectId, { type: 'pipeline.state', name: handle.name, state, error });
    handle.writes = handle.writes
      .then(async () => {
        if (this.handles.get(handle.id) !== handle) return; // dropped: another worker owns it now
        await pipelinesStore.setState(this.pool, handle.id, state, error, this.fleet.workerId);
        if (state === 'starting' && !handle.runId) {
          handle.runId = await runsStore.open(this.pool, handle.id, handle.projectId);
        }
        if ((state === 'stopped' || state === 'failed') && handle.runId) {
          await this.persistProgress();
          await runsStore.close(this.pool, handle.runId, state, state === 'failed' ? error : null);
          handle.runId = null;
        }
        if (state === 'stopped' && previous !== 'stopped') {
          this.handles.delete(handle.id);
          await leasesStore.release(this.pool, handle.id, this.fleet.workerId);
        }
      })
      .catch((e: unknown) =>
        this.logger.error({ err: e, pipeline: handle.name }, 'could not record pipeline state'),
      );
  }

  private async persistProgress(): Promise<void> {
    for (const handle of this.handles.values()) {
      const deltas = handle.stats.takeDeltas();
      if (deltas.events === 0 && deltas.sinkErrors === 0 && deltas.checkpointLsn === null) continue;
      try {
        await pipelinesStore.recordProgress(this.pool, handle.id, deltas);
        if (handle.runId && deltas.events > 0)
          await runsStore.addEvents(this.pool, handle.runId, deltas.events);
      } catch (error) {
        this.logger.warn({ err: error, pipeline: handle.name }, 'could not record progress');
      }
    }
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
