import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { ROLES } from './roles.js';

export const TokenRow = z.object({
  id: z.string(),
  user_id: z.string(),
  project_id: z.string(),
  name: z.string(),
  role: z.enum(ROLES).nullable(),
  prefix: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
export type TokenRow = z.infer<typeof TokenRow>;

const COLUMNS = sql.fragment`id, user_id, project_id, name, role, prefix, created_at, expires_at, revoked_at, last_used_at`;

export function insertToken(
  db: CommonQueryMethods,
  token: {
    userId: string;
    projectId: string;
    name: string;
    role: string | null;
    secretHash: string;
    prefix: string;
    lifetimeHours: number;
  },
): Promise<TokenRow> {
  return db.one(sql.type(TokenRow)`
    INSERT INTO api_tokens (user_id, project_id, name, role, secret_hash, prefix, expires_at)
    VALUES (${token.userId}, ${token.projectId}, ${token.name}, ${token.role}, ${token.secretHash}, ${token.prefix},
            now() + make_interval(hours => ${token.lifetimeHours}))
    RETURNING ${COLUMNS}`);
}

/** A live token by its secret's hash: not revoked, not expired, its user enabled. */
export function findLiveToken(db: CommonQueryMethods, secretHash: string): Promise<TokenRow | null> {
  return db.maybeOne(sql.type(TokenRow)`
    SELECT t.id, t.user_id, t.project_id, t.name, t.role, t.prefix, t.created_at, t.expires_at, t.revoked_at, t.last_used_at
    FROM api_tokens t
    WHERE t.secret_hash = ${secretHash} AND t.revoked_at IS NULL AND t.expires_at > now()
      AND EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND NOT u.disabled)`);
}

export function touchToken(db: CommonQueryMethods, id: string) {
  return db.query(sql.unsafe`
    UPDATE api_tokens SET last_used_at = now()
    WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`);
}

/** Tokens of a project, newest first; of one user when `userId` is given. */
export function listTokens(
  db: CommonQueryMethods,
  projectId: string,
  userId?: string,
): Promise<readonly TokenRow[]> {
  return db.any(sql.type(TokenRow)`
    SELECT ${COLUMNS} FROM api_tokens
    WHERE project_id = ${projectId} ${userId ? sql.fragment`AND user_id = ${userId}` : sql.fragment``}
    ORDER BY created_at DESC, id`);
}

export function findToken(db: CommonQueryMethods, projectId: string, id: string): Promise<TokenRow | null> {
  return db.maybeOne(sql.type(TokenRow)`
    SELECT ${COLUMNS} FROM api_tokens WHERE project_id = ${projectId} AND id = ${id}`);
}

export function revokeToken(db: CommonQueryMethods, id: string): Promise<TokenRow> {
  return db.one(sql.type(TokenRow)`
    UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id} RETURNING ${COLUMNS}`);
}
