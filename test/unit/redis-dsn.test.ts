import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { redisConnectionType } from '../../src/sinks/redis/redis-connection-type.js';
import { parseRedisDsn, redisEndpointOf } from '../../src/sinks/redis/redis-dsn.js';
import { findConnectionType } from '../../src/sinks/registry.js';

function refusal(dsn: string): AppError {
  try {
    parseRedisDsn(dsn);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

const SECRET = 's3cr3t-Pa55';

describe('redis DSN', () => {
  it('reads host, port, database, user and password', () => {
    expect(parseRedisDsn(`redis://app:${SECRET}@cache.example.com:6380/3`)).toEqual({
      tls: false,
      host: 'cache.example.com',
      port: 6380,
      db: 3,
      username: 'app',
      password: SECRET,
      sslpassword: undefined,
      publicDsn: 'redis://app@cache.example.com:6380/3',
    });
  });

  it('defaults the port to 6379 and the database to 0, with no user', () => {
    const dsn = parseRedisDsn('redis://cache');
    expect([dsn.port, dsn.db, dsn.username, dsn.password, dsn.tls]).toEqual([
      6379,
      0,
      undefined,
      undefined,
      false,
    ]);
    expect(parseRedisDsn('redis://cache/').db).toBe(0);
  });

  it('takes a password alone (the default user) and keeps it out of the public DSN', () => {
    const dsn = parseRedisDsn(`redis://:${encodeURIComponent('p@ss/word')}@cache:6379/0`);
    expect(dsn.password).toBe('p@ss/word');
    expect(dsn.username).toBeUndefined();
    expect(dsn.publicDsn).toBe('redis://cache:6379/0');
    expect(dsn.publicDsn).not.toContain('ss');
  });

  it('reads rediss:// as TLS and IPv6 hosts without brackets', () => {
    const dsn = parseRedisDsn('rediss://[::1]:6390/15');
    expect([dsn.tls, dsn.host, dsn.port, dsn.db]).toEqual([true, '::1', 6390, 15]);
  });

  it.each([
    ['http://cache:6379', 'scheme must be redis:// or rediss://'],
    ['not a url', 'must be a URL'],
    ['redis:///0', 'must name a host'],
    ['redis://%2Ftmp%2Fredis.sock/0', 'Unix socket'],
    ['redis+unix:///tmp/redis.sock', 'Unix socket'],
    ['unix:///tmp/redis.sock', 'Unix socket'],
    ['redis://cache:0/0', 'port must be 1 to 65535'],
    ['redis://cache:70000/0', 'must be a URL'],
    ['redis://cache/16', 'from 0 to 15'],
    ['redis://cache/db1', 'database number'],
    ['redis://cache/0/1', 'database number'],
    ['redis://cache/0#frag', '#fragment'],
    ['redis://cache/0\n', 'control character'],
    ['redis://cache/0?password=x', "parameter 'password' put the password in the user part"],
    ['redis://cache/0?db=2', "parameter 'db' give the database number in the path"],
    ['redis://cache/0?tls=true', "parameter 'tls' use the rediss:// scheme"],
    ['redis://cache/0?family=6', "parameter 'family'"],
    ['redis://cache/0?sentinelPassword=x', "parameter 'sentinelPassword' is not supported"],
  ])('refuses %j: %s', (dsn, problem) => {
    const error = refusal(dsn);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.message).toContain(problem);
    expect(error.details).toEqual({ field: 'dsn' });
  });

  it('never echoes a value in a refusal', () => {
    for (const dsn of [
      `redis://u:${SECRET}@cache/99`,
      `redis://u:${SECRET}@cache/0?token=${SECRET}`,
      `redis://u:${SECRET}@cache:99999/0`,
      `http://u:${SECRET}@cache/0`,
    ]) {
      expect(refusal(dsn).message).not.toContain(SECRET);
    }
  });

  it('masks a stored password as the other connection types do', () => {
    const dsn = parseRedisDsn(`redis://app:${SECRET}@cache:6379/2`);
    expect(maskDsn(dsn.publicDsn, { password: true, sslpassword: false })).toBe(
      'redis://app:****@cache:6379/2',
    );
  });

  it('binds a secret to scheme, host, port, database and user', () => {
    const base = redisEndpointOf('redis://app@Cache:6379/2');
    expect(redisEndpointOf('redis://app@cache:6379/2')).toBe(base);
    expect(redisEndpointOf('redis://app@cache/2')).toBe(base);
    for (const other of [
      'rediss://app@cache:6379/2',
      'redis://app@other:6379/2',
      'redis://app@cache:6380/2',
      'redis://app@cache:6379/3',
      'redis://admin@cache:6379/2',
    ]) {
      expect(redisEndpointOf(other), other).not.toBe(base);
    }
    expect(redisEndpointOf('redis://app@cache')).toBe(redisEndpointOf('redis://app@cache:6379/0'));
  });
});

describe('redis connection type', () => {
  it('is registered as a sink only', () => {
    expect(findConnectionType('redis')).toBe(redisConnectionType);
    expect(redisConnectionType.roles).toEqual(['sink']);
  });

  it('refuses TLS material without rediss://', () => {
    const dsn = parseRedisDsn('redis://cache/0');
    expect(() => redisConnectionType.checkTls(dsn, { tls: { ca_cert: 'PEM' } })).toThrow(
      /tls.ca_cert: is given but the DSN does not encrypt: use rediss:\/\//,
    );
    expect(() => redisConnectionType.checkTls(dsn, { tls: {} })).not.toThrow();
    expect(() =>
      redisConnectionType.checkTls(parseRedisDsn('rediss://cache/0'), { tls: { ca_cert: 'PEM' } }),
    ).not.toThrow();
  });

  it('connects with the stored secrets, failing fast while the server is down', async () => {
    const settings = await redisConnectionType.settings(
      'rediss://app@cache.example.com:6380/4',
      { password: SECRET, tls: { ca_cert: 'CA', client_cert: 'CERT', client_key: 'KEY' } },
      NO_LOCAL_ACCESS,
    );
    expect(settings).toMatchObject({
      host: 'cache.example.com',
      port: 6380,
      db: 4,
      username: 'app',
      password: SECRET,
      tls: { ca: 'CA', cert: 'CERT', key: 'KEY', servername: 'cache.example.com' },
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
    });
    const plain = await redisConnectionType.settings('redis://10.0.0.1/0', { tls: {} }, NO_LOCAL_ACCESS);
    expect(plain.tls).toBeUndefined();
    expect(plain.password).toBeUndefined();
  });

  it('checks the stored DSN again before connecting', async () => {
    await expect(
      redisConnectionType.settings('redis://cache/0?x=1', { tls: {} }, NO_LOCAL_ACCESS),
    ).rejects.toThrow(/parameter 'x'/);
  });
});
