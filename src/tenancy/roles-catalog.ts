import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { PROJECT_PERMISSION_ROLE, ROLES, type Role, roleRank } from '../auth/roles.js';

/** The role that, bound at organization scope, also manages the organization (the guard's `organization`). */
const ORGANIZATION_ROLE: Role = 'admin';

const RoleRow = z.object({ name: z.enum(ROLES), rank: z.number(), description: z.string() });

/** A role as the API shows it: the `roles` table's text, and the permissions the guard grants it. */
export interface RoleView {
  name: Role;
  rank: number;
  description: string;
  /** The project permissions it grants in every project of the scope it is bound at. */
  permissions: string[];
  /** Whether, bound at organization scope, it also grants the `organization` permission. */
  manages_organization: boolean;
}

/** The roles, weakest first, with what each may do. */
export async function listRoles(db: CommonQueryMethods): Promise<RoleView[]> {
  const rows = await db.any(sql.type(RoleRow)`SELECT name, rank, description FROM roles ORDER BY rank`);
  return rows.map((row) => ({
    ...row,
    permissions: Object.entries(PROJECT_PERMISSION_ROLE)
      .filter(([, least]) => roleRank(row.name) >= roleRank(least))
      .map(([permission]) => permission),
    manages_organization: row.name === ORGANIZATION_ROLE,
  }));
}
