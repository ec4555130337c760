import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startService } from '../../src/server.js';
import { createSourceAndSink, replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { jsonRequest, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** At info, one line a pipeline state change, naming the pipeline; a failure as a warning with its error. */
describe('the log of pipeline states', { timeout: 120_000 }, () => {
  const lines: Record<string, any>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    }),
  );
  let running: Awaited<ReturnType<typeof startService>>;
  const api = (method: string, path: string, body?: unknown) => jsonRequest(running.url, method, path, body);
  const changes = () =>
    lines.filter((l) => l.pipeline === 'logged' && l.from).map((l) => [l.from, l.to, l.level]);

  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'state_log');
    await sqlOn(dbs.source, 'CREATE TABLE t (id int PRIMARY KEY)');
    running = await startService(testConfig(dbs.store), logger);
    await createSourceAndSink(api, dbs);
    await api('POST', '/v1/pipelines', {
      name: 'logged',
      source: { connection: 'src', tables: ['public.t'] },
      sink: { connection: 'dst' },
    });
  });
  afterAll(() => running?.stop());

  it('writes a line for each change, with the pipeline name', async () => {
    await api('PUT', '/v1/pipelines/logged/state', { state: 'start' });
    await waitFor(async () => changes().some(([, to]) => to === 'running'), 'running logged');
    await api('PUT', '/v1/pipelines/logged/state', { state: 'stop' });
    await waitFor(async () => changes().some(([, to]) => to === 'stopped'), 'stopped logged');
    // The line is written as the state is reached; the store has it a moment later.
    await waitFor(
      async () => (await api('GET', '/v1/pipelines/logged')).body.state === 'stopped',
      'stopped stored',
    );
    expect(changes()).toEqual([
      ['stopped', 'starting', 30],
      ['starting', 'running', 30],
      ['running', 'stopping', 30],
      ['stopping', 'stopped', 30],
    ]);
    expect(lines.find((l) => l.to === 'running')?.msg).toBe('pipeline logged: starting -> running');
  });
});
