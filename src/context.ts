import { DEFAULT_PROJECT_ID } from './store/pool.js';

/** Who is asking and in which project: every service call is scoped by it. */
export interface RequestContext {
  projectId: string;
  /** The audit identity: `system` when authentication is off. */
  actor: string;
}

/** The context of every request while authentication is off. */
export const SYSTEM_CONTEXT: RequestContext = { projectId: DEFAULT_PROJECT_ID, actor: 'system' };
