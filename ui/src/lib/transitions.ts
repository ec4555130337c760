/**
 * Which actions a pipeline's state allows, asked of the pipeline machine itself (the same
 * function the service uses to answer 409 INVALID_TRANSITION), never a table kept here.
 */
import {
  PIPELINE_ACTIONS,
  PIPELINE_STATES,
  type PipelineAction,
  type PipelineState,
} from '../../../machines/pipeline';
import { isActionAllowed } from '../../../machines/pipeline-transitions';

export { PIPELINE_ACTIONS, type PipelineAction };

export function isPipelineState(state: string): state is PipelineState {
  return (PIPELINE_STATES as readonly string[]).includes(state);
}

const answers = new Map<string, boolean>();

/** Whether `action` is allowed in `state`; false for a state the machine does not know. */
export function allows(state: string, action: PipelineAction): boolean {
  const key = `${state}/${action}`;
  let allowed = answers.get(key);
  if (allowed === undefined) {
    allowed = isPipelineState(state) && isActionAllowed(state, action);
    answers.set(key, allowed);
  }
  return allowed;
}

/** The actions `state` allows. */
export function allowedActions(state: string): PipelineAction[] {
  return PIPELINE_ACTIONS.filter((action) => allows(state, action));
}

/** The button text of each action. */
export const ACTION_LABELS: Record<PipelineAction, string> = {
  start: 'Start',
  stop: 'Stop',
  pause: 'Pause',
  resume: 'Resume',
};
