import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startService } from '../../src/server.js';
import { createDatabase } from '../support/pg-cluster.js';
import { waitFor } from '../support/replication-fixture.js';
import { jsonRequest, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** The service's log lines, as objects. */
function capturedLogger() {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

describe('the request log', () => {
  const { logger, lines } = capturedLogger();
  let running: Awaited<ReturnType<typeof startService>>;
  const get = (path: string) => jsonRequest(running.url, 'GET', path);
  const logged = (url: string) => lines.filter((l) => l.msg === 'request completed' && l.req?.url === url);

  beforeAll(async () => {
    const store = await createDatabase(cluster?.adminUrl as string, 'request_log_store');
    running = await startService(testConfig(store), logger);
  });
  afterAll(() => running?.stop());

  it('writes one line a request, and a bounded number for a flood of anonymous refusals', async () => {
    for (let i = 0; i < 5; i++) expect((await get('/v1/pipelines')).status).toBe(200);
    // Written once the answer is sent, a moment after the caller has it.
    await waitFor(async () => logged('/v1/pipelines').length === 5, 'five lines');
    expect(lines.filter((l) => l.msg === 'incoming request')).toHaveLength(0);
    // Reads that succeed are the dashboard's polling: at debug, out of an info log.
    expect(logged('/v1/pipelines').map((l) => l.level)).toEqual([20, 20, 20, 20, 20]);

    for (let i = 0; i < 100; i++) expect((await get('/v1/pipelines/nobody-has-this')).status).toBe(404);
    // A request answered after the flood is logged: every earlier line is written by then.
    await get('/v1/health');
    await waitFor(async () => logged('/v1/health').length === 1, 'the line after the flood');
    const refused = logged('/v1/pipelines/nobody-has-this');
    expect(refused.length).toBe(30);
    expect(new Set(refused.map((l) => l.level))).toEqual(new Set([30]));
  });

  it('cuts a long request target', async () => {
    // On a route of its own: the refusals above used up their route's allowance.
    expect((await get(`/v1/pipelines?${'a'.repeat(5_000)}=1`)).status).toBe(400);
    const line = await waitFor(
      async () =>
        lines.find((l) => l.msg === 'request completed' && l.req?.url?.startsWith('/v1/pipelines?aaa')),
      'the line of the long target',
    );
    expect(line?.req.url.length).toBeLessThan(600);
    expect(line?.req.url).toMatch(/…\[truncated\]$/);
  });
});
