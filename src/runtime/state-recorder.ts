import type { DatabasePool } from 'slonik';
import type { PipelineAction, PipelineState } from '../../machines/pipeline.js';
import { stateAfter } from '../../machines/pipeline-transitions.js';
import type { Logger } from '../log/logger.js';
import { leasesStore } from '../store/leases-store.js';
import { pipelineFiguresStore } from '../store/pipeline-figures-store.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import { resyncStore } from '../store/resync-store.js';
import { runsStore } from '../store/runs-store.js';
import { isStoreUnreachable } from '../store/store-unreachable.js';
import type { PipelineHandle, PipelineReading } from './pipeline-handle.js';
import type { PipelinesView } from './pipeline-registry.js';

const DESIRED: Record<PipelineAction, 'running' | 'paused' | 'stopped'> = {
  start: 'running',
  resume: 'running',
  pause: 'paused',
  stop: 'stopped',
};

/** How often a state write is tried again while the metadata store is out of reach. */
const STATE_RETRY_MS = 1_000;

/**
 * Writes what happens to pipelines into the store, the record of truth: the actions users took
 * and the states they want, every state an actor reaches, the runs, and the progress counted.
 */
export class StateRecorder {
  private closing = false;

  constructor(
    private readonly pool: DatabasePool,
    private readonly logger: Logger,
    private readonly workerId: string,
    private readonly handles: PipelinesView,
  ) {}

  /**
   * Compare-and-set of an accepted action: the stored state moves from `from` to where `action`
   * leads, and the desired state follows. False when another request changed it first.
   */
  accept(pipelineId: string, from: PipelineState, action: PipelineAction): Promise<boolean> {
    return pipelinesStore.transition(this.pool, pipelineId, from, stateAfter(from, action), DESIRED[action]);
  }

  /**
   * Compare-and-set of an accepted resync, in one transaction with what it resets (resync-store):
   * the pipeline starts, from `from`, with a resync waiting for its run. False when another request
   * changed the state first, and then nothing is reset.
   */
  acceptResync(pipelineId: string, projectId: string, from: PipelineState): Promise<boolean> {
    return this.pool.transaction(async (tx) => {
      const to = stateAfter(from, 'start');
      if (!(await pipelinesStore.transition(tx, pipelineId, from, to, DESIRED.start))) return false;
      await resyncStore.record(tx, pipelineId, projectId);
      return true;
    });
  }

  /** The pipeline should stay stopped, whichever instance brings it back. */
  keepStopped(pipelineId: string) {
    return pipelinesStore.setDesiredState(this.pool, pipelineId, 'stopped');
  }

  /** The pipeline is stopped, for the reason `error` says. */
  stoppedBecause(pipelineId: string, error: string) {
    return pipelinesStore.setState(this.pool, pipelineId, 'stopped', error);
  }

  /**
   * Records a state the pipeline's actor reached, after the writes recorded before it: a run opens
   * when it starts and closes when it stops or fails; a stopped pipeline is let go (`letGo`, once
   * its state is stored) and lets go of its lease.
   */
  stateChanged(
    handle: PipelineHandle,
    previous: PipelineState,
    state: PipelineState,
    error: string | null,
    letGo: () => void,
  ): void {
    this.logChange(handle, previous, state, error);
    handle.queueWrite(
      () =>
        this.untilStored(handle, async () => {
          await pipelinesStore.setState(this.pool, handle.id, state, error, this.workerId);
          // A pipeline restored as running opens its run there: it does not pass through starting.
          if ((state === 'starting' || state === 'running') && !handle.runId) {
            handle.runOpened(await runsStore.open(this.pool, handle.id, handle.projectId));
          }
          if ((state === 'stopped' || state === 'failed') && handle.runId) {
            await this.recordProgress();
            await runsStore.close(this.pool, handle.runId, state, state === 'failed' ? error : null);
            handle.runClosed();
          }
          if (state === 'stopped' && previous !== 'stopped') {
            letGo();
            await pipelineFiguresStore.forget(this.pool, handle.id);
            await leasesStore.release(this.pool, handle.id, this.workerId);
          }
        }),
      (e: unknown) => this.logger.error({ err: e, pipeline: handle.name }, 'could not record pipeline state'),
    );
  }

  /**
   * Runs a write of the pipeline's state, again every second while the store is out of reach, so
   * that a state reached during an outage is stored when it is back. Ends without writing when the
   * pipeline was dropped (another worker owns it now) or the service stops.
   */
  private async untilStored(handle: PipelineHandle, write: () => Promise<void>): Promise<void> {
    for (let failures = 0; !this.closing && this.handles.holds(handle); failures++) {
      try {
        await write();
        return;
      } catch (error) {
        if (!isStoreUnreachable(error)) throw error;
        if (failures === 0) {
          this.logger.warn(
            { err: error, pipeline: handle.name },
            'metadata store unreachable; state kept to record',
          );
        }
        await new Promise((r) => setTimeout(r, STATE_RETRY_MS));
      }
    }
  }

  /** One line a state change, with the pipeline's name: a failure as a warning, with its error. */
  private logChange(
    handle: PipelineReading,
    from: PipelineState,
    to: PipelineState,
    error: string | null,
  ): void {
    if (from === to) return;
    const fields = { pipeline: handle.name, from, to };
    if (to === 'failed') this.logger.warn({ ...fields, error }, `pipeline ${handle.name} failed`);
    else if (from === 'failed') this.logger.info(fields, `pipeline ${handle.name} is recovering: ${to}`);
    else this.logger.info(fields, `pipeline ${handle.name}: ${from} -> ${to}`);
  }

  /** The service stops: writes still waiting for the store give up (the next start restores from it). */
  close(): void {
    this.closing = true;
  }

  /** Closes a run that ended with this process rather than with its pipeline (shutdown, deletion). */
  closeRun(runId: string, outcome: 'shutdown' | 'deleted'): Promise<unknown> {
    return runsStore.close(this.pool, runId, outcome, null).catch(() => undefined);
  }

  /** Closes, as interrupted, the runs a worker that died left open. */
  closeAbandonedRuns(pipelineId: string): Promise<unknown> {
    return runsStore.closeAbandoned(this.pool, pipelineId).catch(() => undefined);
  }

  /** Adds to the store what each pipeline's data plane did since the last call. */
  async recordProgress(): Promise<void> {
    for (const handle of this.handles.values()) {
      const deltas = handle.stats.takeDeltas();
      if (deltas.events === 0 && deltas.sinkErrors === 0 && deltas.checkpointLsn === null) continue;
      try {
        // Both or neither (one statement), so that what is handed back below is never counted twice.
        await pipelinesStore.recordProgress(this.pool, handle.id, deltas, handle.runId);
      } catch (error) {
        // Counted again with the next ones: a store down for a while loses none of them.
        handle.stats.giveBack(deltas);
        this.logger.warn({ err: error, pipeline: handle.name }, 'could not record progress');
      }
    }
  }
}
