import type { Role } from './auth/roles.js';
import { DEFAULT_PROJECT_ID } from './store/pool.js';

/** A signed-in caller: a user through a session, or a user's API token. */
export interface Principal {
  kind: 'user' | 'token';
  userId: string;
  email: string;
  organizationId: string;
  /** Set for a token: its id and name, which the audit trail names beside the user. */
  tokenId?: string;
  tokenName?: string;
  /** Set for a session: the stored hash of its id, for logout and switching project. */
  sessionHash?: string;
  /** The caller's role in the active project (through any scope), if any. */
  role: Role | undefined;
  /**
   * Whether the user holds admin at organization scope; a token carries it only when it is not
   * capped below admin.
   */
  organizationAdmin: boolean;
}

/** Who is asking and in which project: every service call is scoped by it. */
export interface RequestContext {
  /** The project a name is looked up in and a record is created in. */
  projectId: string;
  /**
   * Project filtering is off (authentication mode `none`, no project chosen): lists show every
   * project's records. Lookups by name still use `projectId`, resolved from the name beforehand.
   */
  allProjects?: boolean;
  /** The audit identity: `system` when authentication is off, else the user's e-mail or `token:<name>`. */
  actor: string;
  /** The signed-in caller; absent when authentication is off or the request is anonymous. */
  principal?: Principal;
}

/** The project a count or list is limited to: null while project filtering is off. */
export const projectScope = (ctx: RequestContext): string | null => (ctx.allProjects ? null : ctx.projectId);

/** The context of every request while authentication is off. */
export const SYSTEM_CONTEXT: RequestContext = { projectId: DEFAULT_PROJECT_ID, actor: 'system' };
