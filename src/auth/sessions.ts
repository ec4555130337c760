import type { FastifyReply, FastifyRequest } from 'fastify';
import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import { DEFAULT_PROJECT_ID } from '../store/pool.js';
import { defaultProjectFor } from './role-resolution.js';
import { newSecret, SESSION_PREFIX, type SecretHasher } from './secret-token.js';

export const SESSION_COOKIE = 'service_session';

export interface SessionSettings {
  /** Sliding lifetime: a session unused this long ends. */
  ttlMs: number;
  /** Absolute lifetime: a session ends this long after sign-in, however busy. */
  maxLifetimeMs: number;
  /** `auto`: Secure when the request came over https (directly or as the proxy says). */
  secureCookie: 'auto' | 'always' | 'never';
}

const SessionRow = z.object({
  id_hash: z.string(),
  user_id: z.string(),
  project_id: z.string(),
  last_seen_at: z.string(),
  expires_at: z.string(),
});
export type SessionRow = z.infer<typeof SessionRow>;

// The stored expiry is moved at most this often, so a busy dashboard does not write on every call.
const SLIDE_GRANULARITY_MS = 60_000;

/** Server-side sessions: a random id in the cookie, only its HMAC in the database. */
export class Sessions {
  constructor(
    private readonly pool: DatabasePool,
    private readonly hasher: SecretHasher,
    readonly settings: SessionSettings,
  ) {}

  /**
   * Starts a session for a user who has just proved who it is. Any session the request already
   * carried is ended first, so an id planted before sign-in is never promoted (no fixation).
   * Returns the session's active project.
   */
  async start(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: string,
    projectId?: string,
  ): Promise<string> {
    await this.endCarried(request);
    const secret = newSecret(SESSION_PREFIX);
    const project = projectId ?? (await defaultProjectFor(this.pool, userId, DEFAULT_PROJECT_ID));
    const { ttlMs, maxLifetimeMs } = this.settings;
    await this.pool.query(sql.unsafe`
      INSERT INTO sessions (id_hash, user_id, project_id, expires_at, absolute_expires_at, source_address, user_agent)
      VALUES (${this.hasher.hash(secret)}, ${userId}, ${project},
              now() + make_interval(secs => ${Math.min(ttlMs, maxLifetimeMs) / 1000}),
              now() + make_interval(secs => ${maxLifetimeMs / 1000}),
              ${request.ip}, ${(request.headers['user-agent'] ?? '').slice(0, 300)})`);
    reply.setCookie(SESSION_COOKIE, secret, this.cookieOptions(request));
    return project;
  }

  /** The live session a cookie names, its expiry slid forward; undefined when there is none. */
  async authenticate(secret: string): Promise<SessionRow | undefined> {
    if (!secret.startsWith(SESSION_PREFIX)) return undefined;
    const idHash = this.hasher.hash(secret);
    const row = await this.pool.maybeOne(sql.type(SessionRow)`
      SELECT id_hash, user_id, project_id, last_seen_at, expires_at FROM sessions
      WHERE id_hash = ${idHash} AND expires_at > now() AND absolute_expires_at > now()`);
    if (!row) return undefined;
    if (Date.now() - Date.parse(row.last_seen_at) >= SLIDE_GRANULARITY_MS) {
      await this.pool.query(sql.unsafe`
        UPDATE sessions SET last_seen_at = now(),
          expires_at = least(now() + make_interval(secs => ${this.settings.ttlMs / 1000}), absolute_expires_at)
        WHERE id_hash = ${idHash}`);
    }
    return row;
  }

  /** Ends the session the request carries (if any) and clears the cookie. */
  async end(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    await this.endCarried(request);
    reply.clearCookie(SESSION_COOKIE, this.cookieOptions(request));
  }

  async switchProject(idHash: string, projectId: string): Promise<void> {
    await this.pool.query(
      sql.unsafe`UPDATE sessions SET project_id = ${projectId} WHERE id_hash = ${idHash}`,
    );
  }

  /** Ends every session of a user (disabled, deleted, or its password changed). */
  async endAllOf(userId: string): Promise<void> {
    await this.pool.query(sql.unsafe`DELETE FROM sessions WHERE user_id = ${userId}`);
  }

  /** Deletes sessions past their expiry; called now and then by the service. */
  async sweep(): Promise<number> {
    const result = await this.pool.query(sql.unsafe`
      DELETE FROM sessions WHERE expires_at <= now() OR absolute_expires_at <= now()`);
    return result.rowCount;
  }

  private async endCarried(request: FastifyRequest): Promise<void> {
    const carried = request.cookies[SESSION_COOKIE];
    if (carried) {
      await this.pool.query(sql.unsafe`DELETE FROM sessions WHERE id_hash = ${this.hasher.hash(carried)}`);
    }
  }

  private cookieOptions(request: FastifyRequest) {
    const { secureCookie, maxLifetimeMs } = this.settings;
    const secure = secureCookie === 'always' || (secureCookie === 'auto' && request.protocol === 'https');
    return {
      path: '/',
      httpOnly: true,
      sameSite: 'lax' as const,
      secure,
      // The browser may keep it until the absolute cap; the server decides when it really ends.
      maxAge: Math.floor(maxLifetimeMs / 1000),
    };
  }
}
