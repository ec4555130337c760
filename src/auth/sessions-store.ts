import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';

const SessionListing = z.object({
  id: z.string(),
  id_hash: z.string(),
  user_id: z.string(),
  project_id: z.string(),
  created_at: z.string(),
  last_seen_at: z.string(),
  expires_at: z.string(),
  absolute_expires_at: z.string(),
  source_address: z.string().nullable(),
  user_agent: z.string().nullable(),
});
export type SessionListing = z.infer<typeof SessionListing>;

/** A user's live sessions, most recently used first. */
export function listLiveSessions(db: CommonQueryMethods, userId: string): Promise<readonly SessionListing[]> {
  return db.any(sql.type(SessionListing)`
    SELECT id, id_hash, user_id, project_id, created_at, last_seen_at, expires_at, absolute_expires_at,
           source_address, user_agent
    FROM sessions
    WHERE user_id = ${userId} AND expires_at > now() AND absolute_expires_at > now()
    ORDER BY last_seen_at DESC, id`);
}

/** Ends a session by its public id; true when one was ended. */
export async function endSession(db: CommonQueryMethods, id: string, userId?: string): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    DELETE FROM sessions WHERE id = ${id} ${userId ? sql.fragment`AND user_id = ${userId}` : sql.fragment``}`);
  return result.rowCount > 0;
}
