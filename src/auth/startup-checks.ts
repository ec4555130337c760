import { readFileSync, statSync } from 'node:fs';
import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { AuditFile } from '../audit/audit-file.js';
import { ConfigError } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { organizationAdminExists } from './users-store.js';

const AUTH_TABLES = ['users', 'role_bindings', 'api_tokens', 'sessions', 'audit_events', 'sso_providers'];
const METRICS_TOKEN_MIN_LENGTH = 32;

/** The authentication tables exist (migrations ran): else `replicator migrate` was not run on this store. */
export async function checkAuthTables(pool: DatabasePool): Promise<void> {
  const missing = await pool.anyFirst(sql.type(z.object({ name: z.string() }))`
    SELECT name FROM unnest(${sql.array(AUTH_TABLES, 'text')}::text[]) AS name
    WHERE to_regclass(name) IS NULL`);
  if (missing.length > 0) {
    throw new ConfigError(
      'auth tables',
      `the metadata store lacks ${missing.join(', ')}: run "replicator migrate" with a role that may create tables`,
    );
  }
}

/** The audit file can be appended to; with authentication on the service refuses to start without it. */
export async function checkAuditFile(file: AuditFile): Promise<void> {
  try {
    await file.checkWritable();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(
      'audit file',
      `cannot append to ${file.path} (${code}): make the data directory writable by the service user`,
    );
  }
}

/** Reads the scraper's bearer secret for `/metrics`: owner-only, and long enough not to be guessed. */
export function loadMetricsToken(path: string): string {
  const key = 'auth.metrics_token_file';
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(key, `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new ConfigError(key, `${path} must not be readable by group or others: chmod 600 ${path}`);
  }
  if (text.length < METRICS_TOKEN_MIN_LENGTH || /\s/.test(text)) {
    throw new ConfigError(
      key,
      `${path} must hold one secret of at least ${METRICS_TOKEN_MIN_LENGTH} characters; make one with: openssl rand -hex 32`,
    );
  }
  return text;
}

/** No admin yet: every call but bootstrap answers 401 until one is made, which the log says loudly. */
export async function warnWithoutAdmin(pool: DatabasePool, logger: Logger): Promise<void> {
  if (!(await organizationAdminExists(pool))) {
    logger.warn(
      'authentication is enabled but no admin exists: every call is refused with 401 until POST /v1/admin/bootstrap creates one',
    );
  }
}
