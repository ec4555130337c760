import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from 'vitest';
import { startService } from '../../src/server.js';
import { createSourceAndSink, replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { jsonRequest, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** At info, one line a pipeline state change, naming the pipeline; a failure as a warning with its error. */
describe('the log of pipeline states', { timeout: 900_000 }, () => {
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
  it('writes a failure as a warning with its error, and the way back as recovering', async () => {
    // Each wait is generous: under load a start may retry a passing fault (backoff up to about
    // three minutes) before it meets the dropped table. What the service said of the pipeline is
    // printed on a failure, to be read from the test's output.
    onTestFailed(() => {
      const said = lines.filter((l) => l.pipeline === 'logged').slice(-40);
      process.stderr.write(
        `the pipeline's last log lines:\n${said.map((l) => JSON.stringify(l)).join('\n')}\n`,
      );
    });
    // A sink table dropped once its copy is done fails the next start at once (not retried). The
    // copy must be done first: a table dropped while still being copied is simply copied again.
    expect((await api('PUT', '/v1/pipelines/logged/state', { state: 'start' })).status).toBe(200);
    // Stop is refused (409) while the pipeline is still starting: the spec's table has no such
    // pair. The table's stored status is the earlier run's, so the state is waited for too.
    await waitFor(
      async () => (await api('GET', '/v1/pipelines/logged')).body.state === 'running',
      'running',
      300_000,
    );
    await waitFor(
      async () =>
        (await api('GET', '/v1/pipelines/logged/progress')).body.tables?.[0]?.status === 'streaming',
      'the copy done',
      300_000,
    );
    expect((await api('PUT', '/v1/pipelines/logged/state', { state: 'stop' })).status).toBe(200);
    await waitFor(
      async () => (await api('GET', '/v1/pipelines/logged')).body.state === 'stopped',
      'stopped stored',
      300_000,
    );
    await sqlOn(dbs.sink, 'DROP TABLE t');
    expect((await api('PUT', '/v1/pipelines/logged/state', { state: 'start' })).status).toBe(200);
    const failed = await waitFor(
      async () => lines.find((l) => l.pipeline === 'logged' && l.to === 'failed'),
      'failed logged',
      300_000,
    );
    expect(failed).toMatchObject({
      level: 40,
      msg: 'pipeline logged failed',
      error: expect.stringContaining('SINK_TABLE_CHANGED'),
    });
    expect(lines.filter((l) => l.pipeline === 'logged' && l.to === 'failed')).toHaveLength(1);
    expect((await api('POST', '/v1/pipelines/logged/backfill', { tables: ['public.t'] })).status).toBe(202);
    const back = await waitFor(
      async () => lines.find((l) => l.pipeline === 'logged' && l.from === 'failed'),
      'recovery logged',
      300_000,
    );
    expect(back).toMatchObject({ level: 30, msg: 'pipeline logged is recovering: starting' });
    await waitFor(
      async () =>
        (await api('GET', '/v1/pipelines/logged/progress')).body.tables?.[0]?.status === 'streaming',
      'copied again',
      300_000,
    );
  });
});
