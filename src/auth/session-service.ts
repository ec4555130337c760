import type { DatabasePool } from 'slonik';
import type { Principal, RequestContext } from '../context.js';
import { AppError, notFound } from '../errors/app-error.js';
import { isRecordId } from '../store/record-id.js';
import { endSession, listLiveSessions } from './sessions-store.js';

function signedIn(ctx: RequestContext): Principal {
  if (!ctx.principal)
    throw new AppError('AUTH_DISABLED', 'sessions exist only while authentication is enabled');
  return ctx.principal;
}

/**
 * Listing and ending sessions: one's own, or (an organization admin) anyone's, e.g. to sign out a
 * lost laptop.
 */
export class SessionService {
  constructor(private readonly pool: DatabasePool) {}

  async list(ctx: RequestContext, userId: string | undefined) {
    const principal = signedIn(ctx);
    const whose = this.whose(principal, userId);
    return (await listLiveSessions(this.pool, whose)).map((row) => ({
      id: row.id,
      user_id: row.user_id,
      project_id: row.project_id,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      expires_at: row.expires_at,
      absolute_expires_at: row.absolute_expires_at,
      source_address: row.source_address,
      user_agent: row.user_agent,
      current: row.id_hash === principal.sessionHash,
    }));
  }

  async end(ctx: RequestContext, id: string): Promise<void> {
    const principal = signedIn(ctx);
    const ended =
      isRecordId(id) &&
      (await endSession(this.pool, id, principal.organizationAdmin ? undefined : principal.userId));
    if (!ended) throw notFound('session', id);
  }

  private whose(principal: Principal, userId: string | undefined): string {
    if (userId === undefined || userId === principal.userId) return principal.userId;
    if (!principal.organizationAdmin) {
      throw new AppError(
        'FORBIDDEN',
        "another user's sessions: this needs the admin role at organization scope",
      );
    }
    return userId;
  }
}
