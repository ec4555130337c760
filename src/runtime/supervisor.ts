import { randomUUID } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import type { PipelineAction, PipelineState } from '../../machines/pipeline.js';
import type { RequestContext } from '../context.js';
import { LiveHub } from '../live/live-hub.js';
import type { Logger } from '../log/logger.js';
import type { PipelineControl } from '../pipelines/pipeline-status-service.js';
import type { PipelineLiveStats } from '../pipelines/pipeline-view.js';
import type { OrphanedSlot, PipelineLifecycle } from '../pipelines/pipelines-service.js';
import type { PipelineRow } from '../store/pipelines-store.js';
import { ActionRelay } from './action-relay.js';
import { FigureHistory } from './figure-history.js';
import { FleetFigures } from './fleet-figures.js';
import { PipelineActors, type ResumeAs } from './pipeline-actors.js';
import type { PipelineHandle } from './pipeline-handle.js';
import { PipelineRegistry, type PipelinesView } from './pipeline-registry.js';
import { PipelineRequests } from './pipeline-requests.js';
import type { PipelineStats } from './pipeline-stats.js';
import type {
  ConnectionResolver,
  DefinitionCheckOutcome,
  DefinitionToCheck,
  ReplicationRunner,
  VerifiableRun,
} from './replication-runner.js';
import { SOURCE_PROBE_INTERVAL_MS, SourceProbe } from './source-probe.js';
import { StateRecorder } from './state-recorder.js';
import { type StatsObserver, StatsPublisher } from './stats-publisher.js';

/** What a supervisor works with. */
export interface SupervisorDeps {
  pool: DatabasePool;
  runner: ReplicationRunner;
  logger: Logger;
  /** The live feed states and figures go to; one of its own unless given. */
  hub?: LiveHub;
  /** This worker, and how long its leases last without renewal. */
  fleet?: { workerId: string; leaseTtlMs: number };
  /** The longest wait between two attempts of a failing pipeline (60 s unless told). */
  retryMaxDelayMs?: number;
  /** Told of the figures of each pipeline this process takes on, restored ones included (metrics). */
  onStats?: StatsObserver;
}

/** How often live counters are written to the store, and live figures sent to the feed. */
const PERSIST_INTERVAL_MS = 1_000;

/**
 * Owns the actor of every pipeline this process runs. State changes are written to the store
 * (the record of truth) before the actor is told, and every state the actor reaches is
 * persisted; at start, pipelines are brought back to the state their users left them in.
 *
 * One entry point for the API, the fleet and the metrics; each job is done by its own part,
 * all of them acting on the same pipelines.
 */
export class Supervisor implements PipelineLifecycle, PipelineControl {
  private readonly handles: PipelinesView<PipelineHandle>;
  private readonly runner: ReplicationRunner;
  /** This worker, and how long its leases last without renewal. */
  readonly fleet: { workerId: string; leaseTtlMs: number };
  private readonly recorder: StateRecorder;
  private readonly publisher: StatsPublisher;
  private readonly actors: PipelineActors;
  private readonly relay: ActionRelay;
  private readonly requests: PipelineRequests;
  private readonly probe: SourceProbe;
  private readonly figures: FleetFigures;
  private readonly history: FigureHistory;
  private timer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;

  constructor(deps: SupervisorDeps) {
    const { pool, runner, logger } = deps;
    const fleet = deps.fleet ?? { workerId: randomUUID(), leaseTtlMs: 15_000 };
    this.runner = runner;
    this.fleet = fleet;
    // Written only by the actors' part, which takes pipelines on and lets them go; read by the others.
    const registry = new PipelineRegistry();
    this.handles = registry;
    this.recorder = new StateRecorder(pool, logger, fleet.workerId, registry);
    this.figures = new FleetFigures(pool, registry, logger);
    this.history = new FigureHistory(pool, registry, logger);
    this.publisher = new StatsPublisher(deps.hub ?? new LiveHub(), registry, this.figures, deps.onStats);
    this.actors = new PipelineActors(
      pool,
      runner,
      logger,
      fleet,
      registry,
      this.recorder,
      this.publisher,
      deps.retryMaxDelayMs,
    );
    this.probe = new SourceProbe({
      handles: this.handles,
      lookup: (pipelineId) => runner.sourceOf(pipelineId),
      logger,
    });
    this.relay = new ActionRelay(pool, this.handles, this.actors);
    this.requests = new PipelineRequests(
      pool,
      runner,
      logger,
      fleet,
      this.handles,
      this.actors,
      this.recorder,
      this.relay,
    );
  }

  /** Starts the periodic work: progress to the store, live figures to the feed. */
  async start(): Promise<void> {
    this.timer = setInterval(() => {
      void this.recorder.recordProgress();
      void this.figures.sync();
      this.publisher.publish();
      this.history.sample();
    }, PERSIST_INTERVAL_MS);
    this.timer.unref();
    this.probeTimer = setInterval(() => void this.probe.tick(), SOURCE_PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  /** Stops every loop (leaving desired states as they are, so the next start restores them). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.probeTimer);
    await this.actors.stopAll();
    await this.probe.close();
  }

  /** The pipelines this process runs, with their state and figures, for metrics. */
  running(): { id: string; name: string; projectId: string; state: PipelineState; stats: PipelineStats }[] {
    return this.publisher.running();
  }

  /** Live figures, state and last checkpoint of a pipeline this process runs; idle for others. */
  stats(pipelineId: string): PipelineLiveStats {
    return this.publisher.stats(pipelineId);
  }

  statsOf(pipelineId: string): PipelineStats | undefined {
    return this.publisher.statsOf(pipelineId);
  }

  /** The pipelines this process runs, with what a verification reads of a streaming one. */
  verifiable(): { id: string; name: string; projectId: string; state: PipelineState; run?: VerifiableRun }[] {
    return [...this.handles.values()].map((h) => ({
      id: h.id,
      name: h.name,
      projectId: h.projectId,
      state: h.state,
      ...(h.control.verification ? { run: h.control.verification } : {}),
    }));
  }

  /** The state of a pipeline running in this process; undefined for the others. */
  stateHere(pipelineId: string): PipelineState | undefined {
    return this.handles.get(pipelineId)?.state;
  }

  /** The state of a pipeline as this instance knows it: its actor's when it runs here, else the stored one. */
  stateOf(row: PipelineRow): PipelineState {
    return this.handles.get(row.id)?.state ?? (row.state as PipelineState);
  }

  /** Applies a user's action; 409 INVALID_TRANSITION when the pipeline's state does not allow it. */
  requestAction(ctx: RequestContext, name: string, action: PipelineAction): Promise<PipelineState> {
    return this.requests.requestAction(ctx, name, action);
  }

  /** Copies tables of a pipeline again, at once when it streams, else at its next start. */
  requestBackfill(ctx: RequestContext, name: string, tables: readonly string[]) {
    return this.requests.requestBackfill(ctx, name, tables);
  }

  /** Resyncs a stopped or failed pipeline (a new slot, every table copied again) and starts it. */
  requestResync(ctx: RequestContext, name: string) {
    return this.requests.requestResync(ctx, name);
  }

  /** Before a deletion: stops the pipeline and drops its slot and publication on the source. */
  beforeDelete(pipelineId: string, force: boolean): Promise<OrphanedSlot | undefined> {
    return this.requests.beforeDelete(pipelineId, force);
  }

  checkDefinition(
    projectId: string,
    definition: DefinitionToCheck,
    pipelineId?: string,
    resolveConnection?: ConnectionResolver,
  ): Promise<DefinitionCheckOutcome> {
    return this.runner.checkDefinition(projectId, definition, pipelineId, resolveConnection);
  }

  /** The definition of a pipeline changed: a running one restarts its data plane with it. */
  definitionChanged(pipelineId: string, generation?: number): void {
    this.actors.definitionChanged(pipelineId, generation);
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

  /** Hands a schema decision to the pipeline: to its actor here, or through the store to its owner. */
  relayDecision(pipelineId: string, decision: 'approve' | 'reject'): Promise<void> {
    return this.relay.relayDecision(pipelineId, decision);
  }

  /** Carries out an action left in the store by another instance. */
  deliver(pipelineId: string, action: string): void {
    this.relay.deliver(pipelineId, action);
  }

  /** Follows what other instances changed in the store: definitions (hot reload) and backfills asked for. */
  reconcile(): Promise<void> {
    return this.relay.reconcile();
  }

  /** Stops a pipeline's loop and forgets it (before its deletion). */
  forget(pipelineId: string): Promise<void> {
    return this.actors.forget(pipelineId);
  }

  /** Takes on a pipeline whose lease this worker just won (`epoch`), its actor starting in `resumeAs`. */
  adopt(row: PipelineRow, epoch: number, resumeAs: ResumeAs): Promise<PipelineHandle> {
    return this.actors.adopt(row, epoch, resumeAs);
  }

  /**
   * Claims and takes on a pipeline that should run and has no live owner; false when another worker
   * holds it, or a live lease on another pipeline of its source stream (leases-store.ts).
   */
  takeOver(pipelineId: string): Promise<boolean> {
    return this.actors.takeOver(pipelineId);
  }

  /** The pipelines this worker holds. */
  ownedIds(): string[] {
    return this.handles.ids();
  }

  /** Lets go of pipelines whose lease this worker lost: their actors stop, recording nothing. */
  drop(pipelineIds: readonly string[]): void {
    this.actors.drop(pipelineIds);
  }
}
