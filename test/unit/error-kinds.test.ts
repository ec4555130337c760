import { describe, expect, it } from 'vitest';
import { retryAdviceOf } from '../../src/core/retry-advice.js';
import { SideRefusalError } from '../../src/core/side-refusal.js';
import { FencedError } from '../../src/core/sink.js';
import { SlotMissingError, SourceNotReadyError } from '../../src/core/source-errors.js';
import { AppError } from '../../src/errors/app-error.js';
import { isRetryable, isUnreachable, retryAfterMsOf, retryClassOf } from '../../src/runtime/error-kinds.js';
import {
  LocalInfileRefusedError,
  localInfileRefused,
  TOO_MANY_CONNECTIONS_RETRY_MS,
} from '../../src/sinks/mysql/mysql-errors.js';
import { natsFailure } from '../../src/sinks/nats/nats-errors.js';
import { channelClosed, connectFailed, connectionLost } from '../../src/sinks/rabbitmq/broker-errors.js';
import type { RabbitmqSettings } from '../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { requestFailed, statusFailed } from '../../src/sinks/webhook/delivery-errors.js';
import { PgoutputProtocolError } from '../../src/source/postgres/errors.js';
import { SPOOL_FULL_RETRY_MS, SpoolWriteError } from '../../src/source/postgres/spool-write-error.js';

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

const rabbitmq = { endpoint: 'amqp://mq:5672/', password: 'secret' } as RabbitmqSettings;
const mysqlError = (code: string, errno: number, sqlState = 'HY000') =>
  Object.assign(new Error(code), { code, errno, sqlState });

describe('retry classes set where the cause is known', () => {
  it.each([
    ['a webhook receiver that does not answer', requestFailed('https://hook', withCode('ECONNREFUSED'))],
    ['a webhook receiver answering 503', statusFailed('https://hook', 503, undefined, Buffer.from(''))],
    ["a webhook receiver's resolver failing for now", requestFailed('https://hook', withCode('EAI_AGAIN'))],
    ['a NATS server gone', natsFailure(new Error('closed'), 'publishing', true)],
    ['a RabbitMQ connection lost', connectionLost(rabbitmq, new Error('Heartbeat timeout'))],
    ['a RabbitMQ server refusing connections', connectFailed(rabbitmq, withCode('ECONNREFUSED'))],
    ['a MySQL session killed', mysqlError('ER_CONNECTION_KILLED', 1927)],
    ['a MySQL server shutting down', mysqlError('ER_SERVER_SHUTDOWN', 1053)],
    ['MySQL losing its connection', withCode('PROTOCOL_CONNECTION_LOST')],
    ['ioredis: a command on a closed connection', new Error('Connection is closed.')],
    ['a full spool directory', new SpoolWriteError('/spool', 10, withCode('ENOSPC'))],
  ])('waits as long as it takes for %s', (_what, error) => {
    expect(retryClassOf(error)).toBe('until-reachable');
  });

  it.each([
    [
      'a webhook receiver refusing the batch (400)',
      statusFailed('https://hook', 400, undefined, Buffer.from('')),
    ],
    ['a webhook redirect', statusFailed('https://hook', 301, undefined, Buffer.from(''))],
    ["a webhook receiver's name that does not resolve", requestFailed('https://hook', withCode('ENOTFOUND'))],
    ['a RabbitMQ host name that does not resolve', connectFailed(rabbitmq, withCode('ENOTFOUND'))],
    ['a RabbitMQ channel closed by the broker', channelClosed(rabbitmq, new Error('NOT_FOUND'))],
    ['a NATS request that failed otherwise', natsFailure(new Error('bad subject'), 'publishing', false)],
    ['MySQL refusing a duplicate key', mysqlError('ER_DUP_ENTRY', 1062, '23000')],
    [
      'a MySQL server that stopped taking LOAD DATA LOCAL',
      new LocalInfileRefusedError(mysqlError('ER_LOAD_INFILE_CAPABILITY_DISABLED', 4166)),
    ],
    ['a pgoutput message out of order', new PgoutputProtocolError('Commit without Begin')],
    ['a spool directory failing to write', new SpoolWriteError('/spool', 10, withCode('EIO'))],
  ])('retries %s a bounded number of times', (_what, error) => {
    expect(retryClassOf(error)).toBe('backoff');
  });

  it.each([
    ['a newer worker', new FencedError(3, 2)],
    ['a lost slot', new SlotMissingError('s', 'does not exist')],
    ['a source not ready', new SourceNotReadyError(['wal_level is replica'])],
    ['a change the sink refuses', new RefusedChangeError(undefined, undefined, 'value too long')],
    ['a refused login', new SideRefusalError('sink', 'replica', withCode('28P01'))],
    ['a bad definition', new AppError('VALIDATION_FAILED', 'bad')],
    ['a constraint violated (SQLSTATE)', withCode('23505')],
  ])('does not retry %s', (_what, error) => {
    expect([isRetryable(error), retryClassOf(error)]).toEqual([false, 'never']);
  });

  it('lets the error that carries advice decide over what it wraps', () => {
    const wrapped = Object.assign(new Error('refused for now', { cause: withCode('ECONNRESET') }), {
      retry: 'backoff',
    });
    expect(retryClassOf(wrapped)).toBe('backoff');
    expect(retryClassOf(new Error('lost the stream', { cause: wrapped }))).toBe('backoff');
    expect(retryClassOf(new Error('lost the stream', { cause: withCode('ECONNRESET') }))).toBe(
      'until-reachable',
    );
  });

  it('ignores a retry field that is not a class', () => {
    expect(retryAdviceOf(Object.assign(new Error('x'), { retry: 'sometimes' }))).toBeUndefined();
    expect(retryAdviceOf({ retry: 'never', retryAfterMs: -5 })).toEqual({ retry: 'never' });
  });

  it('gives the wait each cause calls for, and none when the runtime’s backoff suits it', () => {
    const busy = statusFailed('https://hook', 429, '7', Buffer.from(''));
    expect(retryAfterMsOf(busy)).toBe(7_000);
    expect(retryAfterMsOf(new Error('batch failed', { cause: busy }))).toBe(7_000);
    expect(retryAfterMsOf(new SpoolWriteError('/spool', 10, withCode('ENOSPC')))).toBe(SPOOL_FULL_RETRY_MS);
    expect(retryAfterMsOf(mysqlError('ER_CON_COUNT_ERROR', 1040, '08004'))).toBe(
      TOO_MANY_CONNECTIONS_RETRY_MS,
    );
    expect(retryClassOf(mysqlError('ER_CON_COUNT_ERROR', 1040, '08004'))).toBe('backoff');
    expect(retryAfterMsOf(withCode('ECONNREFUSED'))).toBe(0);
    expect(retryAfterMsOf(new FencedError(3, 2))).toBe(0);
  });
});

describe('a LOAD DATA LOCAL the server does not take', () => {
  it('is told apart from a refusal of the data: MariaDB’s and MySQL’s codes for local_infile off', () => {
    // MariaDB 10.11's answer, as this machine's server gives it.
    expect(localInfileRefused(mysqlError('ER_LOAD_INFILE_CAPABILITY_DISABLED', 4166))).toBe(true);
    expect(localInfileRefused(mysqlError('ER_NOT_ALLOWED_COMMAND', 1148, '42000'))).toBe(true);
    expect(localInfileRefused(mysqlError('ER_CLIENT_LOCAL_FILES_DISABLED', 3948, '42000'))).toBe(true);
    expect(localInfileRefused(mysqlError('ER_PARSE_ERROR', 1064, '42000'))).toBe(false);
    expect(localInfileRefused(new Error('no errno'))).toBe(false);
  });

  it('is retried, its partition copied again, rather than failing the pipeline as refused data', () => {
    const error = new LocalInfileRefusedError(mysqlError('ER_NOT_ALLOWED_COMMAND', 1148, '42000'));
    expect(isRetryable(error)).toBe(true);
    expect(error.message).toMatch(/local_infile was turned off.*upserts/);
  });
});
