import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { insertToken } from './tokens-store.js';

/**
 * Inserts a token unless its user already holds `max` active ones (not revoked, not expired, in
 * any project): 409 `TOO_MANY_TOKENS`. The user's row is locked, so concurrent creations cannot
 * overshoot the cap together.
 */
export async function insertTokenWithinCap(
  pool: DatabasePool,
  max: number,
  token: Parameters<typeof insertToken>[1],
) {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT 1 FROM users WHERE id = ${token.userId} FOR UPDATE`);
    const active = await tx.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM api_tokens
      WHERE user_id = ${token.userId} AND revoked_at IS NULL AND expires_at > now()`);
    if (active >= max) {
      throw new AppError(
        'TOO_MANY_TOKENS',
        `you hold ${active} active API tokens, the most allowed (auth.max_tokens_per_user): revoke one first`,
      );
    }
    return insertToken(tx, token);
  });
}
