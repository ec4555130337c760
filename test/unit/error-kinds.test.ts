import { describe, expect, it } from 'vitest';
import { FencedError } from '../../src/core/sink.js';
import { isRetryable, isUnreachable } from '../../src/runtime/error-kinds.js';
import { SpoolWriteError } from '../../src/source/postgres/spool-write-error.js';

const withCode = (code: string, message = `connect ${code}`) => Object.assign(new Error(message), { code });

describe('failure kinds', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['MySQL losing its connection', withCode('PROTOCOL_CONNECTION_LOST')],
    ['a PostgreSQL connection failure (class 08)', withCode('08006')],
    ['a PostgreSQL server shutting down', withCode('57P01')],
    ['a PostgreSQL session ended idle in its transaction', withCode('25P03')],
    ['a broken pipe', withCode('EPIPE')],
    ['a MariaDB session killed', withCode('ER_CONNECTION_KILLED')],
    ['pg: the socket closed under a query', new Error('Connection terminated unexpectedly')],
    [
      'pg: a query on a client whose connection failed',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
    ['ioredis: a command on a closed connection', new Error('Connection is closed.')],
    ['an error wrapping a reset connection', new Error('lost the stream', { cause: withCode('ECONNRESET') })],
    ['a full spool directory', new SpoolWriteError('/spool', 10, withCode('ENOSPC'))],
    ['a spool directory over its quota', new SpoolWriteError('/spool', 10, withCode('EDQUOT'))],
  ])('waits as long as it takes for %s', (_what, error) => {
    expect(isRetryable(error)).toBe(true);
    expect(isUnreachable(error)).toBe(true);
  });

  it.each([
    ['a host name that does not resolve (more often a typo)', withCode('ENOTFOUND')],
    ['a deadlock', withCode('40P01')],
    [
      'a message like a lost connection, from something else',
      withCode('XX000', 'Connection terminated unexpectedly'),
    ],
    ['an unknown error', new Error('something odd')],
    ['a newer worker', new FencedError(3, 2)],
    ['a spool directory failing to write (EIO)', new SpoolWriteError('/spool', 10, withCode('EIO'))],
  ])('retries %s a bounded number of times, or not at all', (_what, error) => {
    expect(isUnreachable(error)).toBe(false);
  });
});
