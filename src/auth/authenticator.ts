import type { DatabasePool } from 'slonik';
import type { Principal, RequestContext } from '../context.js';
import { resolveStanding } from './role-resolution.js';
import { weakerRole } from './roles.js';
import type { SecretHasher } from './secret-token.js';
import type { Sessions } from './sessions.js';
import { findLiveToken, touchToken } from './tokens-store.js';
import { findUser, organizationAdminExists } from './users-store.js';

/** What a request presents: a bearer token, a session cookie, both or neither. */
export interface Credentials {
  bearer: string | undefined;
  session: string | undefined;
}

/**
 * Turns credentials into the request's context: who the caller is, which project it acts in and
 * its role there. A bearer token that does not check out is not retried as a session: the caller
 * meant the token.
 */
export class Authenticator {
  constructor(
    private readonly pool: DatabasePool,
    private readonly hasher: SecretHasher,
    private readonly sessions: Sessions,
  ) {}

  async authenticate(credentials: Credentials): Promise<RequestContext | undefined> {
    if (credentials.bearer === undefined && credentials.session === undefined) return undefined;
    // Without an admin nobody is signed in (the specification's rule), even with a live session
    // or token left from before the last admin went: bootstrap first.
    if (!(await organizationAdminExists(this.pool))) return undefined;
    if (credentials.bearer !== undefined) return this.fromToken(credentials.bearer);
    if (credentials.session !== undefined) return this.fromSession(credentials.session);
    return undefined;
  }

  private async fromToken(secret: string): Promise<RequestContext | undefined> {
    const token = await findLiveToken(this.pool, this.hasher.hash(secret));
    if (!token) return undefined;
    const user = await findUser(this.pool, token.user_id);
    if (!user || user.disabled) return undefined;
    await touchToken(this.pool, token.id);
    const standing = await resolveStanding(this.pool, user.id, token.project_id);
    const principal: Principal = {
      kind: 'token',
      userId: user.id,
      email: user.email,
      organizationId: user.organization_id,
      tokenId: token.id,
      tokenName: token.name,
      role: token.role === null ? standing.role : weakerRole(standing.role, token.role),
      // A token narrowed below admin does not carry its user's organization-wide powers.
      organizationAdmin: standing.organizationAdmin && (token.role === null || token.role === 'admin'),
    };
    return { projectId: token.project_id, actor: `${user.email} token ${token.name}`, principal };
  }

  private async fromSession(secret: string): Promise<RequestContext | undefined> {
    const session = await this.sessions.authenticate(secret);
    if (!session) return undefined;
    const user = await findUser(this.pool, session.user_id);
    if (!user || user.disabled) return undefined;
    const standing = await resolveStanding(this.pool, user.id, session.project_id);
    const principal: Principal = {
      kind: 'user',
      userId: user.id,
      email: user.email,
      organizationId: user.organization_id,
      sessionHash: session.id_hash,
      role: standing.role,
      organizationAdmin: standing.organizationAdmin,
    };
    return { projectId: session.project_id, actor: user.email, principal };
  }
}
