import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { natsConnectionType } from '../../src/sinks/nats/nats-connection-type.js';
import { checkNatsDsn, natsEndpointOf, parseNatsDsn } from '../../src/sinks/nats/nats-dsn.js';
import { findConnectionType } from '../../src/sinks/registry.js';

function refusal(dsn: string): AppError {
  try {
    checkNatsDsn(dsn);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

const SECRET = 's3cr3t-Pa55';

describe('nats DSN', () => {
  it('reads host, port, user and password', () => {
    expect(checkNatsDsn(`nats://app:${SECRET}@nats.example.com:4223`)).toEqual({
      tls: false,
      host: 'nats.example.com',
      port: 4223,
      user: 'app',
      password: SECRET,
      sslpassword: undefined,
      publicDsn: 'nats://app@nats.example.com:4223',
    });
  });

  it('defaults the port to 4222, with no authentication', () => {
    const dsn = checkNatsDsn('nats://nats');
    expect([dsn.port, dsn.user, dsn.password, dsn.tls, dsn.publicDsn]).toEqual([
      4222,
      undefined,
      undefined,
      false,
      'nats://nats',
    ]);
    expect(checkNatsDsn('nats://nats/').host).toBe('nats');
  });

  it('takes a token as the password with no user, and keeps it out of the public DSN', () => {
    const dsn = checkNatsDsn(`nats://:${encodeURIComponent('to@k/en')}@nats:4222`);
    expect(dsn.password).toBe('to@k/en');
    expect(dsn.user).toBeUndefined();
    expect(dsn.publicDsn).toBe('nats://nats:4222');
  });

  it('reads tls:// as TLS, and IP hosts (IPv6 without brackets)', () => {
    const dsn = checkNatsDsn('tls://[::1]:4443');
    expect([dsn.tls, dsn.host, dsn.port]).toEqual([true, '::1', 4443]);
    expect(checkNatsDsn('tls://10.1.2.3').host).toBe('10.1.2.3');
  });

  it.each([
    ['http://nats:4222', 'scheme must be nats:// or tls://'],
    ['ws://nats:8080', 'WebSocket'],
    ['wss://nats:8443', 'WebSocket'],
    ['not a url', 'must be a URL'],
    ['nats://', 'must name a host'],
    ['nats://%2Ftmp%2Fnats.sock', 'Unix socket'],
    ['unix:///tmp/nats.sock', 'Unix socket'],
    ['nats://a:4222,b:4222', 'must be a URL'],
    ['nats://a,b', 'one server'],
    ['nats://na%20ts', 'host name or an IP address'],
    ['nats://nats:0', 'port must be 1 to 65535'],
    ['nats://nats:70000', 'must be a URL'],
    ['nats://nats/account', 'must not have a path'],
    ['nats://nats#frag', '#fragment'],
    ['nats://nats\n', 'control character'],
    [`nats://app@nats`, 'a user needs a password'],
    ['nats://nats?token=x', "parameter 'token' give a token as the password"],
    ['nats://nats?tls=true', "parameter 'tls' use the tls:// scheme"],
    ['nats://nats?user=a', "parameter 'user' put the user in the user part"],
    ['nats://nats?servers=a,b', "parameter 'servers' one server per connection"],
    ['nats://nats?creds=/etc/x.creds', "parameter 'creds'"],
    ['nats://nats?no_echo=1', "parameter 'no_echo' is not supported"],
  ])('refuses %j: %s', (dsn, problem) => {
    const error = refusal(dsn);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.message).toContain(problem);
    expect(error.details).toEqual({ field: 'dsn' });
  });

  it('never echoes a value in a refusal', () => {
    for (const dsn of [
      `nats://u:${SECRET}@nats/x`,
      `nats://u:${SECRET}@nats?token=${SECRET}`,
      `nats://u:${SECRET}@nats:99999`,
      `http://u:${SECRET}@nats`,
      `nats://${SECRET}@nats`,
      `nats://u:${SECRET}@a,b`,
    ]) {
      expect(refusal(dsn).message).not.toContain(SECRET);
    }
  });

  it('masks a stored password or token as the other connection types do', () => {
    const dsn = checkNatsDsn(`nats://app:${SECRET}@nats:4222`);
    expect(maskDsn(dsn.publicDsn, { password: true, sslpassword: false })).toBe('nats://app:****@nats:4222');
    const token = checkNatsDsn(`nats://:${SECRET}@nats:4222`);
    const masked = maskDsn(token.publicDsn, { password: true, sslpassword: false });
    expect(masked).toBe('nats://:****@nats:4222');
    // The masked form comes back in an update and parses, the mask standing for the stored secret.
    expect(checkNatsDsn(masked).password).toBe('****');
  });

  it('binds a secret to scheme, host, port and user', () => {
    const base = natsEndpointOf('nats://app@Nats:4222');
    expect(natsEndpointOf('nats://app@nats:4222')).toBe(base);
    expect(natsEndpointOf('nats://app@nats')).toBe(base);
    for (const other of [
      'tls://app@nats:4222',
      'nats://app@other:4222',
      'nats://app@nats:4223',
      'nats://admin@nats:4222',
      'nats://nats:4222',
    ]) {
      expect(natsEndpointOf(other), other).not.toBe(base);
    }
    expect(natsEndpointOf('::not a url')).not.toBe(natsEndpointOf('::not a url either'));
  });
});

describe('nats connection type', () => {
  it('is registered as a sink only', () => {
    expect(findConnectionType('nats')).toBe(natsConnectionType);
    expect(natsConnectionType.roles).toEqual(['sink']);
  });

  it('checks a DSN as given, a user with a password', () => {
    expect(() => natsConnectionType.checkDsn('nats://app@nats', NO_LOCAL_ACCESS)).toThrow(/needs a password/);
    expect(natsConnectionType.checkDsn(`nats://app:${SECRET}@nats`, NO_LOCAL_ACCESS).user).toBe('app');
  });

  it('refuses TLS material without tls://', () => {
    const dsn = parseNatsDsn('nats://nats');
    expect(() => natsConnectionType.checkTls(dsn, { tls: { ca_cert: 'PEM' } })).toThrow(
      /tls.ca_cert: is given but the DSN does not encrypt: use tls:\/\//,
    );
    expect(() => natsConnectionType.checkTls(dsn, { tls: {} })).not.toThrow();
    expect(() =>
      natsConnectionType.checkTls(parseNatsDsn('tls://nats'), { tls: { ca_cert: 'PEM' } }),
    ).not.toThrow();
  });

  it('connects with the stored secrets to the one server, never reconnecting', async () => {
    const settings = await natsConnectionType.settings(
      'tls://app@nats.example.com:4443',
      { password: SECRET, tls: { ca_cert: 'CA', client_cert: 'CERT', client_key: 'KEY' } },
      NO_LOCAL_ACCESS,
    );
    expect(settings).toMatchObject({
      servers: ['nats.example.com:4443'],
      user: 'app',
      pass: SECRET,
      tls: { ca: 'CA', cert: 'CERT', key: 'KEY' },
      reconnect: false,
      ignoreClusterUpdates: true,
    });
    expect(settings.token).toBeUndefined();
    const token = await natsConnectionType.settings(
      'nats://[::1]:4222',
      { password: SECRET, tls: {} },
      NO_LOCAL_ACCESS,
    );
    expect(token).toMatchObject({ servers: ['[::1]:4222'], token: SECRET, tls: null });
    expect(token.user).toBeUndefined();
    const open = await natsConnectionType.settings('tls://nats', { tls: {} }, NO_LOCAL_ACCESS);
    // No CA given: the platform's trusted CAs verify the server.
    expect(open.tls).toEqual({});
    expect([open.user, open.pass, open.token]).toEqual([undefined, undefined, undefined]);
  });

  it('checks the stored DSN again before connecting', async () => {
    await expect(
      natsConnectionType.settings('nats://nats?x=1', { tls: {} }, NO_LOCAL_ACCESS),
    ).rejects.toThrow(/parameter 'x'/);
  });
});
