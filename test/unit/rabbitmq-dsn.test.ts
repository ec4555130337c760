import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { rabbitmqConnectionType } from '../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { parseRabbitmqDsn, rabbitmqEndpointOf } from '../../src/sinks/rabbitmq/rabbitmq-dsn.js';
import { findConnectionType } from '../../src/sinks/registry.js';

function refusal(dsn: string): AppError {
  try {
    parseRabbitmqDsn(dsn);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

const SECRET = 's3cr3t-Pa55';

describe('rabbitmq DSN', () => {
  it('reads host, port, virtual host, user, password and heartbeat', () => {
    expect(parseRabbitmqDsn(`amqp://app:${SECRET}@mq.example.com:5673/orders?heartbeat=15`)).toEqual({
      tls: false,
      host: 'mq.example.com',
      port: 5673,
      vhost: 'orders',
      user: 'app',
      password: SECRET,
      heartbeat: 15,
      sslpassword: undefined,
      publicDsn: 'amqp://app@mq.example.com:5673/orders?heartbeat=15',
    });
  });

  it('defaults the port by scheme and the virtual host to /', () => {
    const plain = parseRabbitmqDsn('amqp://app@mq');
    expect([plain.port, plain.vhost, plain.tls, plain.password, plain.heartbeat]).toEqual([
      5672,
      '/',
      false,
      undefined,
      undefined,
    ]);
    expect(parseRabbitmqDsn('amqp://app@mq/').vhost).toBe('/');
    expect(parseRabbitmqDsn('amqp://app@mq/%2F').vhost).toBe('/');
    expect(parseRabbitmqDsn('amqp://app@mq/a%2Fb').vhost).toBe('a/b');
    const secure = parseRabbitmqDsn('amqps://app@mq');
    expect([secure.tls, secure.port]).toEqual([true, 5671]);
  });

  it('decodes the user and password, and keeps the password out of the public DSN', () => {
    const dsn = parseRabbitmqDsn(
      `amqp://${encodeURIComponent('a@b')}:${encodeURIComponent('p@ss/w:rd')}@mq/`,
    );
    expect([dsn.user, dsn.password]).toEqual(['a@b', 'p@ss/w:rd']);
    expect(dsn.publicDsn).toBe('amqp://a%40b@mq/');
  });

  it('reads IPv6 hosts without brackets', () => {
    const dsn = parseRabbitmqDsn('amqps://app@[::1]:5999/%2F');
    expect([dsn.tls, dsn.host, dsn.port, dsn.vhost]).toEqual([true, '::1', 5999, '/']);
  });

  it.each([
    ['http://app@mq:5672', 'scheme must be amqp:// or amqps://'],
    ['not a url', 'must be a URL'],
    ['amqp:///vhost', 'must name a host'],
    ['amqp:mq', 'must name a host'],
    ['amqp://app@%2Ftmp%2Fsock/', 'Unix socket'],
    ['amqp://mq/', 'must name a user'],
    ['amqp://app@mq:0/', 'port must be 1 to 65535'],
    ['amqp://app@mq:70000/', 'must be a URL'],
    ['amqp://app@mq/a/b', 'one virtual host'],
    ['amqp://app@mq/%ZZ', 'virtual host is not valid percent-encoding'],
    ['amqp://app@mq/%0A', 'virtual host contains a control character'],
    ['amqp://app@mq/#frag', '#fragment'],
    ['amqp://app@mq/\n', 'control character'],
    ['amqp://app@mq/?heartbeat=0', 'heartbeat must be a whole number of seconds from 1 to 3600'],
    ['amqp://app@mq/?heartbeat=3601', 'heartbeat must be'],
    ['amqp://app@mq/?heartbeat=1e2', 'heartbeat must be'],
    ['amqp://app@mq/?heartbeat=5&heartbeat=6', "parameter 'heartbeat' is given twice"],
    ['amqp://app@mq/?password=x', "parameter 'password' put the password in the user part"],
    ['amqp://app@mq/?cacertfile=/etc/ca.pem', "parameter 'cacertfile' give the CA certificate as PEM text"],
    ['amqp://app@mq/?verify=verify_none', "parameter 'verify' amqps:// always verifies"],
    ['amqp://app@mq/?frameMax=1', "parameter 'frameMax' the service sets the frame size"],
    ['amqp://app@mq/?auth_mechanism=external', "parameter 'auth_mechanism'"],
    ['amqp://app@mq/?channel_max=1', "parameter 'channel_max'"],
    ['amqp://app@mq/?foo=1', "parameter 'foo' is not supported (supported: heartbeat)"],
  ])('refuses %j: %s', (dsn, problem) => {
    const error = refusal(dsn);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.message).toContain(problem);
    expect(error.details).toEqual({ field: 'dsn' });
  });

  it('never echoes a value in a refusal', () => {
    for (const dsn of [
      `amqp://u:${SECRET}@mq/a/b`,
      `amqp://u:${SECRET}@mq/?token=${SECRET}`,
      `amqp://u:${SECRET}@mq/?heartbeat=${SECRET}`,
      `amqp://u:${SECRET}@mq:99999/`,
      `amqp://:${SECRET}@mq/`,
      `http://u:${SECRET}@mq/`,
    ]) {
      const message = refusal(dsn).message;
      expect(message).not.toContain(SECRET);
      expect(message).not.toContain(SECRET.slice(0, 6));
    }
  });

  it('masks a stored password as the other connection types do', () => {
    const dsn = parseRabbitmqDsn(`amqp://app:${SECRET}@mq:5672/orders`);
    expect(maskDsn(dsn.publicDsn, { password: true, sslpassword: false })).toBe(
      'amqp://app:****@mq:5672/orders',
    );
  });

  it('binds a secret to scheme, host, port, virtual host and user', () => {
    const base = rabbitmqEndpointOf('amqp://app@MQ:5672/orders');
    expect(rabbitmqEndpointOf('amqp://app@mq:5672/orders')).toBe(base);
    expect(rabbitmqEndpointOf('amqp://app@mq/orders?heartbeat=10')).toBe(base);
    for (const other of [
      'amqps://app@mq:5672/orders',
      'amqp://app@other:5672/orders',
      'amqp://app@mq:5673/orders',
      'amqp://app@mq:5672/billing',
      'amqp://app@mq:5672/',
      'amqp://admin@mq:5672/orders',
    ]) {
      expect(rabbitmqEndpointOf(other), other).not.toBe(base);
    }
    expect(rabbitmqEndpointOf('amqp://app@mq')).toBe(rabbitmqEndpointOf('amqp://app@mq:5672/%2F'));
    expect(rabbitmqEndpointOf('amqps://app@mq')).toBe(rabbitmqEndpointOf('amqps://app@mq:5671/'));
  });
});

describe('rabbitmq connection type', () => {
  it('is registered as a sink only', () => {
    expect(findConnectionType('rabbitmq')).toBe(rabbitmqConnectionType);
    expect(rabbitmqConnectionType.roles).toEqual(['sink']);
  });

  it('refuses TLS material without amqps://', () => {
    const dsn = parseRabbitmqDsn('amqp://app@mq/');
    expect(() => rabbitmqConnectionType.checkTls(dsn, { tls: { client_cert: 'PEM' } })).toThrow(
      /tls.client_cert: is given but the DSN does not encrypt: use amqps:\/\//,
    );
    expect(() => rabbitmqConnectionType.checkTls(dsn, { tls: {} })).not.toThrow();
    expect(() =>
      rabbitmqConnectionType.checkTls(parseRabbitmqDsn('amqps://app@mq/'), { tls: { ca_cert: 'PEM' } }),
    ).not.toThrow();
  });

  it('connects with an options object holding the stored secrets, verifying TLS', async () => {
    const settings = await rabbitmqConnectionType.settings(
      'amqps://app@mq.example.com:5671/orders?heartbeat=10',
      { password: SECRET, tls: { ca_cert: 'CA', client_cert: 'CERT', client_key: 'KEY' } },
      NO_LOCAL_ACCESS,
    );
    expect(settings.connect).toEqual({
      protocol: 'amqps',
      hostname: 'mq.example.com',
      port: 5671,
      vhost: 'orders',
      username: 'app',
      password: SECRET,
      heartbeat: 10,
      locale: 'en_US',
    });
    expect(settings.socket).toMatchObject({
      ca: 'CA',
      cert: 'CERT',
      key: 'KEY',
      rejectUnauthorized: true,
      servername: 'mq.example.com',
      timeout: 10_000,
    });
    expect(settings.endpoint).toBe('mq.example.com:5671 (vhost orders)');
    expect(settings.endpoint).not.toContain(SECRET);

    const plain = await rabbitmqConnectionType.settings('amqp://app@10.0.0.1/', { tls: {} }, NO_LOCAL_ACCESS);
    expect(plain.connect).toMatchObject({ protocol: 'amqp', vhost: '/', password: '', heartbeat: 30 });
    expect(plain.socket.ca).toBeUndefined();
    expect(plain.socket.servername).toBeUndefined();
    // No SNI for an address: TLS allows only names there.
    const byAddress = await rabbitmqConnectionType.settings(
      'amqps://app@[::1]/',
      { tls: {} },
      NO_LOCAL_ACCESS,
    );
    expect(byAddress.socket.servername).toBeUndefined();
    expect(byAddress.endpoint).toBe('[::1]:5671 (vhost /)');
  });

  it('checks the stored DSN again before connecting', async () => {
    await expect(
      rabbitmqConnectionType.settings('amqp://app@mq/?x=1', { tls: {} }, NO_LOCAL_ACCESS),
    ).rejects.toThrow(/parameter 'x'/);
  });
});
