import type { DatabasePool } from 'slonik';
import { fromCallback, fromPromise } from 'xstate';
import {
  MAX_RETRY_DELAY_MS,
  type PipelineEvent,
  type PipelineState,
  type PrepareFailure,
  pipelineMachine,
  retryWaitMs,
} from '../../machines/pipeline.js';
import type { Logger } from '../log/logger.js';
import { leasesStore } from '../store/leases-store.js';
import { pipelineFiguresStore } from '../store/pipeline-figures-store.js';
import { type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';
import { isRetryable, isUnreachable, messageOf, retryAfterMsOf } from './error-kinds.js';
import { PipelineHandle } from './pipeline-handle.js';
import type { PipelineRegistry } from './pipeline-registry.js';
import { type ControlFigures, PipelineStats } from './pipeline-stats.js';
import type { ReplicationRunner } from './replication-runner.js';
import { runAttributed } from './run-attribution.js';
import type { StateRecorder } from './state-recorder.js';
import type { StatsPublisher } from './stats-publisher.js';

/** The state an adopted pipeline's actor starts in. */
export type ResumeAs = 'stopped' | 'running' | 'paused' | 'failed';

/**
 * Spawns, takes on and lets go of the actor of each pipeline this process runs. The actor is the
 * pipeline machine given the data plane to invoke; every state it reaches is shown and recorded.
 * It alone adds pipelines to the registry and removes them from it.
 */
export class PipelineActors {
  /** The tail of each pipeline's queue of actions and take-overs in this process. */
  private readonly queues = new Map<string, Promise<void>>();
  /**
   * The data planes of pipelines whose lease this worker lost, until they end. Letting go never
   * waits for them (a loop can be stuck in a sink statement behind a lock for as long as the
   * server lets it), but this worker takes such a pipeline on again only once its loop ended.
   */
  private readonly retiring = new Map<string, Promise<void>>();

  constructor(
    private readonly pool: DatabasePool,
    private readonly runner: ReplicationRunner,
    private readonly logger: Logger,
    private readonly fleet: { workerId: string; leaseTtlMs: number },
    private readonly handles: PipelineRegistry,
    private readonly recorder: StateRecorder,
    private readonly publisher: StatsPublisher,
    /** The longest wait between two attempts of a failing pipeline. */
    private readonly retryMaxDelayMs = MAX_RETRY_DELAY_MS,
  ) {}

  /**
   * Takes on a pipeline whose lease this worker just won (`epoch`), its actor starting in
   * `resumeAs`. Runs left open by a worker that died are closed as interrupted.
   */
  async adopt(row: PipelineRow, epoch: number, resumeAs: ResumeAs): Promise<PipelineHandle> {
    // A pipeline that already has an actor here keeps it: two would run two data planes on one slot.
    const existing = this.handles.get(row.id);
    if (existing) return existing;
    await this.retiring.get(row.id);
    // Closed before the actor opens a run of its own, which this must not close too.
    await this.recorder.closeAbandonedRuns(row.id);
    // The lag its last owner measured (a restart, a take-over) holds until this one measures its own.
    const carriedLagMs = await pipelineFiguresStore.lagOf(this.pool, row.id).catch(() => null);
    return this.handles.get(row.id) ?? this.spawn(row, epoch, resumeAs, carriedLagMs ?? 0);
  }

  /**
   * Claims and takes on a pipeline that should run and has no live owner, unless this process
   * runs it already or a request on it is under way here. False when another worker holds it.
   */
  takeOver(pipelineId: string): Promise<boolean> {
    return this.exclusive(pipelineId, async () => {
      if (this.handles.has(pipelineId)) return true;
      // Its previous data plane here has not ended yet: a later tick claims it.
      if (this.retiring.has(pipelineId)) return false;
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
  exclusive<T>(pipelineId: string, work: () => Promise<T>): Promise<T> {
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

  /** The definition of a pipeline changed: a running one restarts its data plane with it. */
  definitionChanged(pipelineId: string, generation?: number): void {
    const handle = this.handles.get(pipelineId);
    if (handle && generation !== undefined) handle.followGeneration(generation);
    if (handle?.state === 'running') handle.send({ type: 'RELOAD' });
  }

  /**
   * Lets go of pipelines whose lease this worker lost: their actors stop, recording nothing. Their
   * loops end in the background (a write they still attempt is refused by the fencing epoch), so
   * that the fleet's tick goes on renewing the other leases meanwhile.
   */
  drop(pipelineIds: readonly string[]): void {
    for (const id of pipelineIds) {
      const handle = this.handles.get(id);
      if (!handle) continue;
      this.logger.warn({ pipeline: handle.name }, 'lost the lease of the pipeline; another worker takes it');
      this.handles.remove(handle);
      handle.stop();
      const ended = handle.loop.then(() => {
        if (this.retiring.get(id) === ended) this.retiring.delete(id);
      });
      this.retiring.set(id, ended);
    }
  }

  /** Stops a pipeline's loop and forgets it (before its deletion). */
  async forget(pipelineId: string): Promise<void> {
    await this.retiring.get(pipelineId);
    const handle = this.handles.get(pipelineId);
    if (!handle) return;
    handle.stop();
    await handle.loop;
    if (handle.runId) await this.recorder.closeRun(handle.runId, 'deleted');
    await handle.writes;
    this.handles.remove(handle);
  }

  /** Stops every loop (leaving desired states as they are, so the next start restores them). */
  async stopAll(): Promise<void> {
    this.recorder.close();
    const handles = [...this.handles.values()];
    for (const h of handles) h.stop();
    // Each data plane's wait is logged while it lasts, as a stop's is (slow-stop.ts).
    const ended = handles.map((h) => h.awaitStop(this.logger.child({ pipeline: h.name })));
    await Promise.all([...ended, ...this.retiring.values()]);
    await this.recorder.recordProgress();
    for (const h of handles) {
      if (h.runId) await this.recorder.closeRun(h.runId, 'shutdown');
      await h.writes;
      // Another instance, or this one restarted, can take it on at once rather than after the lease runs out.
      await leasesStore.release(this.pool, h.id, this.fleet.workerId).catch(() => undefined);
    }
    this.handles.clear();
  }

  private spawn(row: PipelineRow, epoch: number, resumeAs: ResumeAs, carriedLagMs = 0): PipelineHandle {
    const stats: PipelineStats = new PipelineStats({
      lastCheckpointAt: row.last_checkpoint_at,
      control: (): ControlFigures => handle.machineFigures(),
    });
    if (carriedLagMs > 0) stats.carryLag(Date.now() - carriedLagMs);
    const handle: PipelineHandle = new PipelineHandle({
      id: row.id,
      name: row.name,
      projectId: row.project_id,
      stats,
      resumeAs,
      error: row.error,
      generation: row.generation,
      epoch,
      machine: (h) => this.machineFor(row, h),
      changed: (h, previous, state, error) => this.changed(h, previous, state, error),
    });
    this.handles.add(handle);
    this.publisher.attach(handle);
    handle.start();
    return handle;
  }

  /** The pipeline machine, given the data plane of `handle`'s pipeline to invoke. */
  private machineFor(row: PipelineRow, handle: PipelineHandle) {
    const log = this.logger.child({ pipeline: row.name });
    return pipelineMachine.provide({
      actors: {
        prepare: fromPromise(() => {
          // An error escaping the preparation (an 'error' event nobody listened to) fails it too.
          let escaped: (error: unknown) => void = () => undefined;
          const failed = new Promise<never>((_, reject) => {
            escaped = reject;
          });
          const run = { pipeline: row.name, fail: (error: unknown) => escaped(error) };
          return Promise.race([runAttributed(run, () => this.runner.prepare(row.id)), failed]).catch(
            (error: unknown) => {
              log.warn({ err: error }, 'could not prepare the pipeline');
              throw {
                message: messageOf(error),
                retryable: isRetryable(error),
                retryAfterMs: retryAfterMsOf(error),
              } satisfies PrepareFailure;
            },
          );
        }),
        replicate: fromCallback(({ sendBack }) => {
          const controller = new AbortController();
          const report = (event: PipelineEvent) => {
            if (!controller.signal.aborted) sendBack(event);
          };
          let progressed = false;
          handle.stats.tellProgressTo(() => {
            if (progressed) return;
            progressed = true;
            report({ type: 'PROGRESS' });
          });
          const failed = (error: unknown) => {
            if (controller.signal.aborted) return;
            log.warn({ err: error }, 'replication failed');
            report({
              type: 'FAILED',
              message: messageOf(error),
              retryable: isRetryable(error),
              unreachable: isUnreachable(error),
              retryAfterMs: retryAfterMsOf(error),
            });
          };
          // An error escaping the run (an 'error' event nobody listened to) fails it as a thrown one
          // would, and stops what is left of it.
          const run = {
            pipeline: row.name,
            fail: (error: unknown) => {
              failed(error);
              controller.abort(error);
            },
          };
          handle.runAfterLoop(
            () => {
              if (controller.signal.aborted) return;
              return runAttributed(run, () =>
                this.runner.run(
                  row.id,
                  handle.stats,
                  controller.signal,
                  (phase) => report({ type: 'PHASE', phase }),
                  handle.control,
                ),
              );
            },
            (outcome) =>
              report(
                outcome === 'held-for-schema'
                  ? { type: 'SCHEMA_CHANGE' }
                  : { type: 'FAILED', message: 'the change stream ended unexpectedly', retryable: true },
              ),
            failed,
          );
          return () => controller.abort();
        }),
        drain: fromPromise(() => handle.awaitStop(log)),
      },
      delays: {
        backoff: ({ context }) => retryWaitMs(context, this.retryMaxDelayMs),
      },
    });
  }

  /** A state the actor reached: on the feed at once, in the store after the writes before it. */
  private changed(
    handle: PipelineHandle,
    previous: PipelineState,
    state: PipelineState,
    error: string | null,
  ): void {
    this.publisher.stateChanged(handle, state, error);
    // A pipeline that stopped is let go once its state is stored, before its lease is.
    this.recorder.stateChanged(handle, previous, state, error, () => this.handles.remove(handle));
  }
}
