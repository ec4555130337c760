import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { installProcessGuard, verdictOn } from '../../src/runtime/process-guard.js';

const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });
const run = { pipeline: 'orders', fail: () => undefined };

describe('the process guard', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a bug', new TypeError('x is undefined')],
  ])('fails the run of the pipeline that %s escaped from', (_what, error) => {
    expect(verdictOn(error, run)).toBe('fail-run');
  });

  it.each([
    ['a reset connection', withCode('ECONNRESET')],
    ['a broken pipe', withCode('EPIPE')],
    ['a PostgreSQL session ended', withCode('57P01', 'terminating connection due to administrator command')],
    ['a session idle in its transaction too long', withCode('25P03')],
    ['a socket closed early', withCode('ERR_STREAM_PREMATURE_CLOSE')],
    ['pg: the socket closed under a query', new Error('Connection terminated unexpectedly')],
  ])('lets the process go on after %s outside any pipeline', (_what, error) => {
    expect(verdictOn(error, undefined)).toBe('carry-on');
  });

  it.each([
    ['a bug', new TypeError('x is undefined')],
    ['a constraint violated', withCode('23505')],
    ['something thrown that is not an error', 'oops'],
  ])('ends the process for %s outside any pipeline', (_what, error) => {
    expect(verdictOn(error, undefined)).toBe('fatal');
  });

  it('listens once however many services install it, and not at all once each removed it', () => {
    const before = ['uncaughtException', 'unhandledRejection'].map((e) => process.listenerCount(e));
    const logger = createLogger('silent');
    const removeFirst = installProcessGuard(logger);
    const removeSecond = installProcessGuard(logger);
    expect(process.listenerCount('uncaughtException')).toBe((before[0] ?? 0) + 1);
    expect(process.listenerCount('unhandledRejection')).toBe((before[1] ?? 0) + 1);
    removeFirst();
    removeFirst();
    expect(process.listenerCount('uncaughtException')).toBe((before[0] ?? 0) + 1);
    removeSecond();
    expect(['uncaughtException', 'unhandledRejection'].map((e) => process.listenerCount(e))).toEqual(before);
  });

  it("charges a socket's unhandled error to the run it was opened in, carries on after a lost connection, ends after a bug", () => {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(process.cwd(), 'test/support/process-guard-child.ts')],
      { encoding: 'utf8', timeout: 30_000 },
    );
    const lines = child.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const steps = lines.filter((l) => l.step).map((l) => l.step);
    expect(steps).toEqual([
      'orders failed: ECONNREFUSED',
      'went on after a lost connection outside any pipeline',
    ]);
    const logged = lines.filter((l) => l.msg);
    expect(logged.map((l) => [l.level, l.pipeline])).toEqual([
      [50, 'orders'],
      [50, undefined],
      [60, undefined],
    ]);
    expect(String(logged[2]?.msg)).toMatch(/the process ends/);
    expect(child.status, child.stderr).toBe(1);
  });
});
