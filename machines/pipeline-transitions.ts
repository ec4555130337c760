import { getNextSnapshot } from 'xstate';
import {
  type Phase,
  type PipelineAction,
  type PipelineEvent,
  type PipelineState,
  pipelineMachine,
} from './pipeline.js';

/** The machine event each API action sends. */
export const ACTION_EVENTS: Record<PipelineAction, PipelineEvent> = {
  start: { type: 'START' },
  stop: { type: 'STOP' },
  pause: { type: 'PAUSE' },
  resume: { type: 'RESUME' },
};

/** The API state of a machine snapshot value: its top-level state. */
export function apiState(value: unknown): PipelineState {
  const top = typeof value === 'string' ? value : Object.keys(value as object)[0];
  return (top === 'restoring' ? 'stopped' : top) as PipelineState;
}

/**
 * The phase of the data plane in a machine snapshot value: the `running.replicating` substate it
 * reported; `streaming` while held for a schema review (the stream holds, only the stream sees a
 * table change shape); `idle` whenever the data plane does not run.
 */
export function phaseOf(value: unknown): Phase | 'idle' {
  if (apiState(value) === 'pending_schema_approval') return 'streaming';
  const running = (value as { running?: unknown }).running;
  const replicating = (running as { replicating?: unknown } | undefined)?.replicating;
  return replicating === 'snapshot' || replicating === 'streaming' ? replicating : 'idle';
}

/**
 * Whether `action` is allowed in `state`, asked of the machine itself, so that an instance that
 * does not run the pipeline's actor answers exactly as the owning one would.
 */
export function isActionAllowed(state: PipelineState, action: PipelineAction): boolean {
  return snapshotIn(state).can(ACTION_EVENTS[action]);
}

/** The state an allowed action leads to at once, before any actor has done its work. */
export function stateAfter(state: PipelineState, action: PipelineAction): PipelineState {
  return apiState(getNextSnapshot(pipelineMachine, snapshotIn(state), ACTION_EVENTS[action]).value);
}

const snapshotIn = (state: PipelineState) =>
  pipelineMachine.resolveState({
    value: state,
    context: { pipelineId: '', error: null, retries: 0, resumeAs: 'stopped' },
  });
