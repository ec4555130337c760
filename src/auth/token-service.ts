import type { DatabasePool } from 'slonik';
import type { RequestContext } from '../context.js';
import { AppError, notFound } from '../errors/app-error.js';
import { isRecordId } from '../store/record-id.js';
import { type Role, roleRank } from './roles.js';
import { newSecret, type SecretHasher, TOKEN_PREFIX } from './secret-token.js';
import { insertTokenWithinCap } from './token-cap.js';
import { findToken, listTokens, revokeToken, type TokenRow } from './tokens-store.js';

export const TOKEN_DEFAULT_LIFETIME_HOURS = 720;
export const TOKEN_MAX_LIFETIME_HOURS = 8_760;

export interface NewToken {
  name: string;
  lifetimeHours?: number;
  role?: Role;
}

/** A token as listed: never its secret, only the first characters to tell it apart. */
function toTokenView(row: TokenRow) {
  return {
    id: row.id,
    name: row.name,
    user_id: row.user_id,
    project_id: row.project_id,
    role: row.role,
    prefix: row.prefix,
    created_at: row.created_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
    last_used_at: row.last_used_at,
  };
}

function requireUser(ctx: RequestContext) {
  const principal = ctx.principal;
  if (!principal) {
    throw new AppError('AUTH_DISABLED', 'API tokens exist only while authentication is enabled');
  }
  return principal;
}

/**
 * API tokens: each belongs to the user who made it and to the project it was made in, acts with
 * its user's role there (or a weaker one given at creation), and ends at its expiry or revocation.
 */
export class TokenService {
  constructor(
    private readonly pool: DatabasePool,
    private readonly hasher: SecretHasher,
    /** Active tokens one user may hold: each is a credential to watch, and they cost nothing to mint. */
    private readonly maxPerUser: number,
  ) {}

  async create(ctx: RequestContext, input: NewToken) {
    const principal = requireUser(ctx);
    if (principal.kind === 'token') {
      throw new AppError('FORBIDDEN', 'tokens are created from a signed-in session, not with another token');
    }
    if (input.role && (!principal.role || roleRank(input.role) > roleRank(principal.role))) {
      throw new AppError(
        'FORBIDDEN',
        `a token cannot hold more than its user: you hold ${principal.role ?? 'no role'} in this project`,
      );
    }
    const secret = newSecret(TOKEN_PREFIX);
    const row = await insertTokenWithinCap(this.pool, this.maxPerUser, {
      userId: principal.userId,
      projectId: ctx.projectId,
      name: input.name,
      role: input.role ?? null,
      secretHash: this.hasher.hash(secret),
      prefix: secret.slice(0, TOKEN_PREFIX.length + 6),
      lifetimeHours: input.lifetimeHours ?? TOKEN_DEFAULT_LIFETIME_HOURS,
    });
    // The only time the secret leaves the service.
    return { ...toTokenView(row), token: secret };
  }

  /** The caller's tokens in the active project; a project admin sees everyone's. */
  async list(ctx: RequestContext) {
    const principal = requireUser(ctx);
    const everyone = principal.role === 'admin';
    return (await listTokens(this.pool, ctx.projectId, everyone ? undefined : principal.userId)).map(
      toTokenView,
    );
  }

  /** Revokes one of the caller's tokens (a project admin: any token of the project). Idempotent. */
  async revoke(ctx: RequestContext, id: string) {
    const principal = requireUser(ctx);
    const row = isRecordId(id) ? await findToken(this.pool, ctx.projectId, id) : null;
    if (!row || (row.user_id !== principal.userId && principal.role !== 'admin')) throw notFound('token', id);
    return toTokenView(await revokeToken(this.pool, row.id));
  }
}
