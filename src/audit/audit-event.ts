/** One entry of the audit trail: who did what to which record, from where, and how it ended. */
export interface AuditEvent {
  /** `system` while authentication is off; `anonymous` for a refused or failed sign-in. */
  actorType: 'system' | 'user' | 'token' | 'anonymous';
  /** The user's id (for a token, its user's id); absent for system and anonymous. */
  actorId?: string;
  /** `system`, the user's e-mail, or `<e-mail> token <name>`. */
  actorName: string;
  /** What was attempted, e.g. `pipeline.create`, `auth.login`, `token.revoke`. */
  action: string;
  /** The record acted on, e.g. `pipeline:orders`. */
  target?: string;
  projectId?: string;
  sourceAddress?: string;
  outcome: 'success' | 'denied' | 'failure';
  /** The HTTP status answered. */
  status?: number;
  /** The service's id of the request. */
  requestId?: string;
  /** The caller's own `x-request-id`, when short and well-formed. */
  clientRequestId?: string;
  /** Facts that help a reader (never a secret): e.g. the e-mail a failed login named. */
  details?: Record<string, unknown>;
}

export interface StoredAuditEvent extends AuditEvent {
  id: number;
  at: string;
}
