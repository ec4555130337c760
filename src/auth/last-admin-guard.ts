import { type CommonQueryMethods, sql } from 'slonik';
import { AppError } from '../errors/app-error.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

/**
 * Serialises every change that may shrink the set of enabled organization admins, so that two
 * admins disabling each other at the same moment cannot both pass the check below. The lock is
 * `FOR NO KEY UPDATE` on the organization's row: it does not block the inserts that reference it.
 * Call it first in the transaction that makes the change.
 */
export async function lockAdminSet(db: CommonQueryMethods): Promise<void> {
  await db.query(
    sql.unsafe`SELECT 1 FROM organizations WHERE id = ${DEFAULT_ORGANIZATION_ID} FOR NO KEY UPDATE`,
  );
}

/** Whether a user is enabled and holds admin at organization scope. */
function isEnabledOrganizationAdmin(db: CommonQueryMethods, userId: string): Promise<boolean> {
  return db.exists(sql.unsafe`
    SELECT 1 FROM role_bindings b JOIN users u ON u.id = b.user_id
    WHERE b.user_id = ${userId} AND b.role = 'admin' AND b.scope_type = 'organization'
      AND b.scope_id = ${DEFAULT_ORGANIZATION_ID} AND NOT u.disabled`);
}

/**
 * Refuses a change that takes organization admin away from `userId` (disabling or deleting it,
 * or removing its binding) when no other enabled user holds it: the service must never be left
 * without someone who can manage users. Run it under `lockAdminSet`.
 */
export async function refuseRemovingLastAdmin(
  db: CommonQueryMethods,
  userId: string,
  change: string,
): Promise<void> {
  if (!(await isEnabledOrganizationAdmin(db, userId))) return;
  const another = await db.exists(sql.unsafe`
    SELECT 1 FROM role_bindings b JOIN users u ON u.id = b.user_id
    WHERE b.user_id <> ${userId} AND b.role = 'admin' AND b.scope_type = 'organization'
      AND b.scope_id = ${DEFAULT_ORGANIZATION_ID} AND NOT u.disabled`);
  if (!another) {
    throw new AppError(
      'LAST_ADMIN',
      `cannot ${change}: it is the last enabled organization admin; make another user admin at organization scope first`,
      { user_id: userId },
    );
  }
}
