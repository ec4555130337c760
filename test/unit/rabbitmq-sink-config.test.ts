import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import {
  BrokerError,
  cleanMessage,
  connectFailed,
  connectionLost,
} from '../../src/sinks/rabbitmq/broker-errors.js';
import {
  checkRabbitmqTables,
  parseRabbitmqSinkProperties,
  routeOf,
} from '../../src/sinks/rabbitmq/config.js';
import { MessageBuilder } from '../../src/sinks/rabbitmq/message.js';
import { rabbitmqSettings } from '../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { parseRabbitmqDsn } from '../../src/sinks/rabbitmq/rabbitmq-dsn.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

describe('rabbitmq sink properties', () => {
  it('has defaults', () => {
    expect(parseRabbitmqSinkProperties({})).toEqual({
      exchange: 'replicator',
      exchangeType: 'topic',
      routingKey: '{schema}.{table}',
      mandatory: true,
      batch: { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 },
    });
  });

  it('routes each table by the templates', () => {
    const config = parseRabbitmqSinkProperties({
      exchange: 'cdc.{schema}',
      routing_key: '{table}.{schema}.{table}',
      exchange_type: 'direct',
      mandatory: 'false',
    });
    expect(config.exchangeType).toBe('direct');
    expect(config.mandatory).toBe(false);
    expect(routeOf(config, { schema: 'public', table: 'orders' })).toEqual({
      exchange: 'cdc.public',
      routingKey: 'orders.public.orders',
    });
    // Names are taken as they are, `$&` and all.
    expect(routeOf(config, { schema: '$&', table: '{schema}' })).toEqual({
      exchange: 'cdc.$&',
      routingKey: '{schema}.$&.{schema}',
    });
    // An empty routing key is AMQP's own (a fanout exchange ignores it).
    expect(parseRabbitmqSinkProperties({ routing_key: '' }).routingKey).toBe('');
  });

  it.each([
    [{ exchange: '' }, 'sink.properties.exchange', "the default exchange ('') is not supported"],
    [{ exchange: 'cdc.{tabel}' }, 'sink.properties.exchange', 'unknown placeholder {tabel}'],
    [{ exchange: 'cdc.{table' }, 'sink.properties.exchange', 'brace'],
    [{ routing_key: 'x}' }, 'sink.properties.routing_key', 'brace'],
    [{ routing_key: '{Schema}' }, 'sink.properties.routing_key', 'unknown placeholder {Schema}'],
    [{ routing_key: 'a\nb' }, 'sink.properties.routing_key', 'control characters'],
    [{ exchange: 'x'.repeat(256) }, 'sink.properties.exchange', 'at most 255 bytes'],
    [{ routing_key: 'é'.repeat(128) }, 'sink.properties.routing_key', 'at most 255 bytes'],
    [
      { exchange_type: 'x-delayed-message' },
      'sink.properties.exchange_type',
      'topic, direct, fanout, headers',
    ],
    [{ mandatory: 'yes' }, 'sink.properties.mandatory', "must be 'true' or 'false'"],
    [{ batch_max_events: '0' }, 'sink.properties.batch_max_events', 'from 1 to 1000000'],
    [{ batch_max_bytes: '10' }, 'sink.properties.batch_max_bytes', 'from 1024'],
    [{ batch_max_wait_ms: '60001' }, 'sink.properties.batch_max_wait_ms', 'to 60000'],
    [
      { stream: 'x' },
      'sink.properties.stream',
      'unknown property; known properties are exchange, exchange_type, routing_key, mandatory',
    ],
  ])('refuses %j', (props, field, problem) => {
    const error = refusal(() => parseRabbitmqSinkProperties(props));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ field });
    expect(error.message).toContain(problem);
  });

  it('refuses tables whose exchange or routing key would pass 255 bytes', () => {
    const long = { schema: 'public', table: 't'.repeat(200) };
    const props = { exchange: 'cdc.{table}', routing_key: '{table}.{table}' };
    const error = refusal(() => checkRabbitmqTables(props, [{ schema: 'public', table: 'ok' }, long]));
    expect(error.details).toEqual({ field: 'sink.properties.routing_key' });
    expect(error.message).toContain(`longer than 255 bytes for table public.${long.table}`);
    expect(() => checkRabbitmqTables({}, [long])).not.toThrow();
  });

  it('is the sink of rabbitmq connections, checking its tables', () => {
    expect(sinkTypes()).toContain('rabbitmq');
    const kind = findSinkKind('rabbitmq');
    expect(kind?.parseProperties({ mandatory: 'false' })).toMatchObject({ mandatory: false });
    expect(kind?.checkTables).toBe(checkRabbitmqTables);
  });
});

describe('rabbitmq messages', () => {
  const config = parseRabbitmqSinkProperties({});
  const table = { schema: 'shop', table: 'orders' };

  it('are persistent JSON, named by the envelope id, typed by the op', () => {
    const envelope = {
      id: '0/1000/shop/orders/0',
      op: 'insert' as const,
      table: 'shop.orders',
      key: { id: 1 },
      before: null,
      after: { id: 1 },
      lsn: '0/1000',
      commit_time: '2024-05-01T12:00:01.500Z',
    };
    const message = new MessageBuilder(config).messageOf(table, envelope, 0);
    expect(message.exchange).toBe('replicator');
    expect(message.routingKey).toBe('shop.orders');
    expect(JSON.parse(message.content.toString())).toEqual(envelope);
    expect(message.options).toEqual({
      persistent: true,
      mandatory: true,
      contentType: 'application/json',
      messageId: '0/1000/shop/orders/0',
      timestamp: Date.parse('2024-05-01T12:00:01Z') / 1000,
      type: 'insert',
      appId: 'replicator',
      headers: { schema: 'shop', table: 'orders', op: 'insert' },
    });
  });

  it('stamp a snapshot row with the time it is published', () => {
    const message = new MessageBuilder(parseRabbitmqSinkProperties({ mandatory: 'false' })).messageOf(
      table,
      {
        id: 'snapshot/shop/orders/["1"]',
        op: 'read',
        table: 'shop.orders',
        key: { id: 1 },
        before: null,
        after: { id: 1 },
        lsn: null,
        commit_time: null,
      },
      1_700_000_000_999,
    );
    expect(message.options).toMatchObject({ timestamp: 1_700_000_000, type: 'read', mandatory: false });
  });
});

describe('rabbitmq sink errors', () => {
  const SECRET = 'hunter2-secret';
  const settings = rabbitmqSettings(parseRabbitmqDsn('amqp://app@mq:5672/orders'), {
    password: SECRET,
    tls: {},
  });

  it('keep an unreachable broker retried for as long as it is down', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), { code: 'ECONNREFUSED' });
    const error = connectFailed(settings, refused);
    expect(error.message).toBe(
      'cannot connect to RabbitMQ at mq:5672 (vhost orders): connect ECONNREFUSED 127.0.0.1:5672',
    );
    expect(isUnreachable(error)).toBe(true);
    expect(isUnreachable(connectFailed(settings, new Error('connect ETIMEDOUT')))).toBe(true);
    expect(
      isUnreachable(connectFailed(settings, new Error('Socket closed abruptly during opening handshake'))),
    ).toBe(true);
  });

  it('count a connection the broker closed, or that went silent, as an outage', () => {
    const forced = Object.assign(
      new Error('Connection closed: 320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - shutdown"'),
      { code: 320 },
    );
    expect(connectionLost(settings, forced)).toMatchObject({ code: 'ECONNRESET' });
    expect(isUnreachable(connectionLost(settings, forced))).toBe(true);
    expect(connectionLost(settings, new Error('Heartbeat timeout'))).toMatchObject({ code: 'ETIMEDOUT' });
    expect(connectionLost(settings, Object.assign(new Error('x'), { code: 'EPIPE' }))).toMatchObject({
      code: 'EPIPE',
    });
  });

  it('do not retry forever a refused login, and never show the password', () => {
    const refused = connectFailed(
      settings,
      new Error(
        `Handshake terminated by server: 403 (ACCESS-REFUSED) for ${SECRET} and ${encodeURIComponent(SECRET)}`,
      ),
    );
    expect(refused).toBeInstanceOf(BrokerError);
    expect(refused.code).toBeUndefined();
    expect(isUnreachable(refused)).toBe(false);
    expect(refused.message).not.toContain(SECRET);
    expect(cleanMessage(new Error(`a ${SECRET} b`), { password: SECRET })).toBe('a **** b');
    expect(cleanMessage(new Error('a b'), { password: undefined })).toBe('a b');
  });
});
