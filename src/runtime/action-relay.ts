import type { DatabasePool } from 'slonik';
import type { PipelineAction } from '../../machines/pipeline.js';
import { ACTION_EVENTS } from '../../machines/pipeline-transitions.js';
import { leasesStore } from '../store/leases-store.js';
import { pipelinesStore } from '../store/pipelines-store.js';
import type { PipelineActors } from './pipeline-actors.js';
import type { PipelineHandle } from './pipeline-handle.js';
import type { PipelinesView } from './pipeline-registry.js';

/** What a user can ask of a pipeline that another instance of the fleet may run. */
export type RelayedAction = PipelineAction | 'approve' | 'reject';

/**
 * Carries what is asked of a pipeline to the instance that runs it, through the store: actions and
 * schema decisions left for the owner, definition changes and backfills another instance recorded.
 */
export class ActionRelay {
  constructor(
    private readonly pool: DatabasePool,
    private readonly handles: PipelinesView<PipelineHandle>,
    private readonly actors: PipelineActors,
  ) {}

  /** Leaves an action in the store for the worker that runs the pipeline to carry out. */
  askOwner(pipelineId: string, action: RelayedAction) {
    return leasesStore.requestAction(this.pool, pipelineId, action);
  }

  /** Hands a schema decision to the pipeline: to its actor here, or through the store to its owner. */
  async relayDecision(pipelineId: string, decision: 'approve' | 'reject'): Promise<void> {
    const handle = this.handles.get(pipelineId);
    if (handle) handle.send({ type: decision === 'approve' ? 'APPROVE' : 'REJECT' });
    else await this.askOwner(pipelineId, decision);
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
    if (handle && event && handle.accepts(event)) handle.send(event);
  }

  /** Follows what other instances changed in the store: definitions (hot reload) and backfills asked for. */
  async reconcile(): Promise<void> {
    if (this.handles.size === 0) return;
    for (const row of await pipelinesStore.followUps(this.pool, this.handles.ids())) {
      const handle = this.handles.get(row.id);
      if (!handle) continue;
      if (row.generation !== handle.generation) this.actors.definitionChanged(handle.id, row.generation);
      if (row.backfill.length > 0) await handle.control.backfill?.(row.backfill);
    }
  }
}
