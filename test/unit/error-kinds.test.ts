import { describe, expect, it } from 'vitest';
import { FencedError } from '../../src/core/sink.js';
import { isRetryable, isUnreachable } from '../../src/runtime/error-kinds.js';

const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

describe('failure kinds', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['MySQL losing its connection', withCode('PROTOCOL_CONNECTION_LOST')],
    ['a PostgreSQL connection failure (class 08)', withCode('08006')],
    ['a PostgreSQL server shutting down', withCode('57P01')],
  ])('waits as long as it takes for %s', (_what, error) => {
    expect(isRetryable(error)).toBe(true);
    expect(isUnreachable(error)).toBe(true);
  });

  it.each([
    ['a host name that does not resolve (more often a typo)', withCode('ENOTFOUND')],
    ['a deadlock', withCode('40P01')],
    ['an unknown error', new Error('something odd')],
    ['a newer worker', new FencedError(3, 2)],
  ])('retries %s a bounded number of times, or not at all', (_what, error) => {
    expect(isUnreachable(error)).toBe(false);
  });
});
