/**
 * Whether a PostgreSQL error, by its SQLSTATE, can go away by trying again: a broken connection,
 * a server shutting down, a deadlock or serialization failure, a lock or resource shortage. Data
 * that breaks a constraint or a type, a missing table, a privilege or a login that is refused do
 * not heal by retrying; they need a person.
 */
export function healsByRetrying(sqlstate: string): boolean {
  const cls = sqlstate.slice(0, 2);
  if (PERMANENT_CLASSES.has(cls) || PERMANENT_CODES.has(sqlstate)) return false;
  return true;
}

// 22 data exception, 23 integrity constraint, 42 syntax or access rule (undefined table or column,
// insufficient privilege, datatype mismatch), 28 invalid authorization, 44 check option, 2B/2F/39
// dependent objects and routines, 3F invalid schema name.
const PERMANENT_CLASSES = new Set(['22', '23', '28', '42', '44', '2B', '2F', '39', '3F']);
// Invalid catalog name (no such database), read-only transaction (a standby as sink).
const PERMANENT_CODES = new Set(['3D000', '25006']);

/** The SQLSTATE of a PostgreSQL error, if it is one. */
export function sqlstateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}
