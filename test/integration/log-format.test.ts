import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { prettyLogs } from '../../src/log/logger.js';
import { startCliServer, stopChild } from '../support/cli-process.js';
import { createDatabase, freePort } from '../support/pg-cluster.js';

const [cluster] = inject('pgClusters');

describe('the log format', () => {
  const servers: Awaited<ReturnType<typeof startCliServer>>[] = [];
  afterAll(async () => {
    for (const server of servers) await stopChild(server.child, 'SIGKILL');
  });

  it('is pretty on a terminal and JSON elsewhere, unless told', () => {
    expect(prettyLogs('auto', true)).toBe(true);
    expect(prettyLogs('auto', false)).toBe(false);
    expect(prettyLogs('json', true)).toBe(false);
    expect(prettyLogs('pretty', false)).toBe(true);
  });

  it('writes JSON lines to a pipe, and lines for a person with --log-format pretty', async () => {
    const store = await createDatabase(cluster?.adminUrl as string, 'log_format_store');
    for (const format of ['auto', 'pretty'] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), 'replicator-log-format-'));
      const server = await startCliServer(
        ['--database-url', store, '--data-dir', dataDir, '--log-format', format],
        await freePort(),
      );
      servers.push(server);
      const first = server
        .output()
        .split('\n')
        .find((line) => line.includes('listening'));
      expect(first, server.output()).toBeDefined();
      if (format === 'auto') expect(JSON.parse(first as string)).toMatchObject({ level: 30 });
      else {
        expect(() => JSON.parse(first as string)).toThrow();
        expect(first).toMatch(/INFO/);
      }
      await stopChild(server.child, 'SIGTERM');
    }
  });
});
