import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCliServer, stopChild } from '../support/cli-process.js';
import { freePort } from '../support/pg-cluster.js';
import { jsonRequest } from '../support/service.js';

const IN_USE_EXIT_CODE = 3;

function expectRefused(result: ReturnType<typeof runCli>, dataDir: string, ownerPid: number | undefined) {
  expect(result.code).toBe(IN_USE_EXIT_CODE);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toContain(
    `replicator: data directory ${dataDir} is in use by another replicator process (pid ${ownerPid})`,
  );
}

describe('data directory of an embedded store', () => {
  it('is refused to migrate and serve while a service uses it, and taken back once its owner died', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'replicator-lock-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const service = await startCliServer(['--data-dir', dataDir], port);
    try {
      expectRefused(runCli(['migrate', '--data-dir', dataDir]), dataDir, service.child.pid);
      expect((await jsonRequest(base, 'GET', '/v1/health')).status).toBe(200);

      const otherPort = await freePort();
      const second = runCli(['serve', '--data-dir', dataDir, '--port', String(otherPort)]);
      expectRefused(second, dataDir, service.child.pid);
      expect((await jsonRequest(base, 'GET', '/v1/health')).status).toBe(200);
    } finally {
      await stopChild(service.child, 'SIGKILL');
    }

    // The dead owner's embedded PostgreSQL is still running; migrate takes it back, then stops it.
    const migrated = runCli(['migrate', '--data-dir', dataDir, '--log-level', 'info']);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toContain('no migration pending');
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('takes back a lock whose pid now belongs to another process', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'replicator-lock-'));
    // This test process is alive, but started at another time than the lock says.
    writeFileSync(join(dataDir, 'postgres.lock'), JSON.stringify({ pid: process.pid, start_time: '1' }));
    const migrated = runCli(['migrate', '--data-dir', dataDir]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(existsSync(join(dataDir, 'postgres.lock'))).toBe(false);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
