import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { surviveConnectionLoss } from '../core/pg-connection-loss.js';
import type { Logger } from '../log/logger.js';
import { packageRoot } from '../paths.js';

const MIGRATIONS_DIR = join(packageRoot, 'migrations');
const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// One fixed key: every instance of the service serialises its migrations on it.
const LOCK_KEY = 7_600_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => FILE_PATTERN.test(file))
    .sort()
    .map((file) => {
      const [, version, name] = FILE_PATTERN.exec(file) as RegExpExecArray;
      return { version: Number(version), name: name as string, sql: readFileSync(join(dir, file), 'utf8') };
    });
}

/**
 * Applies pending migrations, each in its own transaction, under a session advisory lock so that
 * instances starting together apply each migration exactly once. A plain pg client is used here
 * because migration files hold several statements, which only the simple query protocol runs.
 * Returns the versions applied by this call.
 */
export async function migrate(databaseUrl: string, logger: Logger, dir = MIGRATIONS_DIR): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // A store that goes away mid-migration fails the migration (and the start), with its own error.
  surviveConnectionLoss(client);
  await client.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    for (const migration of listMigrations(dir)) {
      if (done.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        await client.query(migration.sql);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(
          `migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      logger.info({ version: migration.version, migration: migration.name }, 'applied migration');
      applied.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return applied;
}
