import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { loadMasterKey } from '../../src/secrets/master-key.js';
import { SecretBox } from '../../src/secrets/secret-box.js';
import { runCli, startCliServer, stopChild } from '../support/cli-process.js';
import { createDatabase, freePort } from '../support/pg-cluster.js';
import { jsonRequest, startTestService, testConfig } from '../support/service.js';
import { queryStore } from '../support/store-query.js';
import { workerHeartbeats } from '../support/worker-heartbeats.js';

const [firstCluster] = inject('pgClusters');
const adminUrl = firstCluster?.adminUrl as string;

const query = <T = any>(url: string, text: string) => queryStore<T>(url, text);

describe('service lifecycle', () => {
  it('keeps connections and pipelines across a restart, passwords still readable', async () => {
    const storeUrl = await createDatabase(adminUrl, 'lifecycle_restart');
    const config = testConfig(storeUrl);
    const first = await startTestService(config);
    await first.request('POST', '/v1/connections', {
      name: 'a',
      type: 'postgres',
      dsn: 'postgres://u:pw1@h/db',
    });
    await first.request('POST', '/v1/pipelines', {
      name: 'p',
      source: { connection: 'a', tables: ['public.t'] },
      sink: { connection: 'a', properties: { k: 'v' } },
    });
    const before = (await first.request('GET', '/v1/pipelines/p')).body;
    await first.stop();

    const second = await startTestService(config);
    expect((await second.request('GET', '/v1/pipelines/p')).body).toEqual(before);
    expect((await second.request('GET', '/v1/connections/a')).body.dsn).toBe('postgres://u:****@h/db');
    await second.stop();

    const [row] = await query<{ password_sealed: string }>(
      storeUrl,
      "SELECT password_sealed FROM connections WHERE name = 'a'",
    );
    const box = new SecretBox(loadMasterKey(undefined, config.dataDir, true));
    expect(box.open(row?.password_sealed as string)).toBe('pw1');
  });

  it('lets two instances start together on one empty database', async () => {
    const storeUrl = await createDatabase(adminUrl, 'lifecycle_concurrent');
    const [a, b] = await Promise.all([
      startTestService(testConfig(storeUrl)),
      startTestService(testConfig(storeUrl)),
    ]);
    try {
      const versions = await query<{ version: number; n: number }>(
        storeUrl,
        'SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version',
      );
      expect(versions.length).toBeGreaterThan(0);
      expect(versions.every((v) => v.n === 1)).toBe(true);
      const projects = await query<{ n: number }>(storeUrl, 'SELECT count(*)::int AS n FROM projects');
      expect(projects[0]?.n).toBe(1);
      // Both see the same store and count each other as workers.
      await a.request('POST', '/v1/connections', {
        name: 'shared',
        type: 'postgres',
        dsn: 'postgres://u@h/db',
      });
      expect((await b.request('GET', '/v1/connections/shared')).status).toBe(200);
      expect((await b.request('GET', '/v1/health')).body.workers).toBe(2);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('reports the store as unavailable with 503 when it goes away', async () => {
    const storeUrl = await createDatabase(adminUrl, 'lifecycle_unavailable');
    const service = await startTestService(testConfig(storeUrl));
    try {
      const healthy = await service.request('GET', '/v1/health');
      expect(healthy.status).toBe(200);
      expect(healthy.body.workers).toBe(1);
      await query(
        adminUrl,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'lifecycle_unavailable'",
      );
      await query(adminUrl, 'ALTER DATABASE lifecycle_unavailable ALLOW_CONNECTIONS false');
      await query(
        adminUrl,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'lifecycle_unavailable'",
      );
      const health = await service.request('GET', '/v1/health');
      expect(health.status).toBe(503);
      expect(health.body.status).toBe('unavailable');
      expect(health.body.checks[0]).toMatchObject({ name: 'store', status: 'failing' });
      expect(health.body.checks[0].erroring_since).toMatch(/Z$/);
      // The last known counts, not zeros.
      expect(health.body).toMatchObject({ workers: 1, pipelines_running: 0 });
      const list = await service.request('GET', '/v1/pipelines');
      expect(list.status).toBeGreaterThanOrEqual(500);
      expect(list.body.code).toMatch(/^(UNAVAILABLE|INTERNAL)$/);
      expect(JSON.stringify(list.body)).not.toMatch(/postgres:\/\//);
    } finally {
      await query(adminUrl, 'ALTER DATABASE lifecycle_unavailable ALLOW_CONNECTIONS true');
      await service.stop();
    }
  });

  it('reports the last known counts while the store is down, though health was not asked before', async () => {
    const storeUrl = await createDatabase(adminUrl, 'lifecycle_last_known');
    const service = await startTestService(testConfig(storeUrl));
    try {
      // Two heartbeats: the health counts are refreshed in the background on the same period (a
      // third of the lease TTL), so they are known by then.
      await workerHeartbeats(storeUrl, 2);
      await query(adminUrl, 'ALTER DATABASE lifecycle_last_known ALLOW_CONNECTIONS false');
      await query(
        adminUrl,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'lifecycle_last_known'",
      );
      const health = await service.request('GET', '/v1/health');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({ status: 'unavailable', workers: 1, pipelines_running: 0 });
    } finally {
      await query(adminUrl, 'ALTER DATABASE lifecycle_last_known ALLOW_CONNECTIONS true');
      await service.stop();
    }
  });
});

// Each test starts the CLI (node with tsx) once or several times: on a busy machine one start alone
// has taken 50 s, so the bound is one that only a hang reaches.
describe('command line', { timeout: 300_000 }, () => {
  it('prints the version', () => {
    const { code, stdout } = runCli(['version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^v\d+\.\d+\.\d+$/);
  });

  it.each([
    [['--auth-mode', 'sometimes'], 'config error: auth.mode: must be one of none, enabled (got "sometimes")'],
    [['--port', '99999'], 'config error: port: must be a port number from 1 to 65535 (got "99999")'],
    [['--log-level', 'loud'], 'config error: log.level: must be one of'],
    [['--bogus'], "config error: command line: Unknown option '--bogus'"],
    [['frobnicate'], "error: unknown command 'frobnicate'"],
  ])('exits 2 with one line for %j', (args, line) => {
    const { code, stderr } = runCli(
      ['serve', ...args].filter((a) => a !== 'serve' || args[0] !== 'frobnicate'),
    );
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(line);
  });

  it('reads a YAML file, with environment and flags taking precedence', () => {
    const dir = mkdtempSync(join(tmpdir(), 'replicator-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'auth:\n  session_ttl: soon\n');
    expect(runCli(['serve', '--config', file]).stderr).toContain('auth.session_ttl: must be a duration');
    expect(runCli(['serve', '--config', file], { REPLICATOR_AUTH_MODE: 'x' }).stderr).toContain(
      'auth.session_ttl',
    );
    writeFileSync(file, 'log:\n  levle: info\n');
    expect(runCli(['serve', '--config', file]).stderr.trim()).toBe(
      'config error: log.levle: unknown key in the config file',
    );
  });

  it('refuses auth mode enabled with exit 2 and one line naming the failed check and its fix', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'r-'));
    const serve = (...flags: string[]) =>
      runCli(['serve', '--auth-mode', 'enabled', '--data-dir', dataDir, ...flags]);
    const expectRefusal = (result: { code: number | null; stderr: string }, ...parts: string[]) => {
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      for (const part of parts) expect(result.stderr).toContain(part);
    };
    // No key: enabled mode never generates one.
    expectRefusal(serve(), 'auth.master_key_file', 'openssl rand -hex 32');
    const keyFile = join(dataDir, 'master.key');
    writeFileSync(keyFile, 'ab'.repeat(32), { mode: 0o644 });
    chmodSync(keyFile, 0o644);
    expectRefusal(serve(), 'auth.master_key_file', `chmod 600 ${keyFile}`);
    writeFileSync(keyFile, 'not hex at all');
    chmodSync(keyFile, 0o600);
    expectRefusal(serve(), 'auth.master_key_file', 'exactly 64 hex characters');
    writeFileSync(keyFile, 'ab'.repeat(32));
    // The audit file cannot be appended to (a directory stands in its place, which even root cannot append to).
    mkdirSync(join(dataDir, 'audit.log'));
    expectRefusal(serve(), 'audit file', 'writable by the service user');
    rmdirSync(join(dataDir, 'audit.log'));
    const tokenFile = join(dataDir, 'metrics.token');
    writeFileSync(tokenFile, 'short', { mode: 0o600 });
    expectRefusal(
      serve('--auth-metrics-token-file', tokenFile),
      'auth.metrics_token_file',
      'at least 32 characters',
    );
  });

  it('migrates a database and exits', async () => {
    const storeUrl = await createDatabase(adminUrl, 'lifecycle_migrate');
    const first = runCli(['migrate', '--database-url', storeUrl, '--log-level', 'info']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('applied migration');
    const again = runCli(['migrate'], { REPLICATOR_DATABASE_URL: storeUrl, REPLICATOR_LOG_LEVEL: 'info' });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('no migration pending');
    expect(again.stdout).not.toContain('postgres://');
  });

  it('serves on an embedded PostgreSQL in the data directory, keeping data across restarts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'replicator-embedded-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const first = await startCliServer(['--data-dir', dataDir], port);
    const created = await jsonRequest(base, 'POST', '/v1/connections', {
      name: 'c',
      type: 'postgres',
      dsn: 'postgres://me:hunter2@h/db',
    });
    expect(created.status).toBe(201);
    expect(await stopChild(first.child)).toBe(0);
    expect(first.output()).not.toContain('hunter2');
    expect(readdirSync(join(dataDir, 'postgres'))).not.toContain('postmaster.pid');

    // A hard kill leaves the embedded server behind; the next start takes the directory back.
    const second = await startCliServer(['--data-dir', dataDir], port);
    expect((await jsonRequest(base, 'GET', '/v1/connections/c')).body.dsn).toBe('postgres://me:****@h/db');
    await stopChild(second.child, 'SIGKILL');
    const third = await startCliServer(['--data-dir', dataDir], port);
    expect((await jsonRequest(base, 'GET', '/v1/connections/c')).status).toBe(200);
    expect(await stopChild(third.child)).toBe(0);
  });
});
