import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import {
  checkMysqlTls,
  mysqlConnectionOptions,
  mysqlConnectionType,
} from '../../src/sinks/mysql/mysql-connection-type.js';
import { mysqlEndpointOf, parseMysqlDsn } from '../../src/sinks/mysql/mysql-dsn.js';

function refusal(dsn: string): AppError {
  try {
    parseMysqlDsn(dsn);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

const SECRET = 'S3cr3t-pa55';

describe('mysql DSN allow-list', () => {
  it('reads host, port, database, user and password, and stores the DSN without the password', () => {
    const dsn = parseMysqlDsn(`mysql://app:${SECRET}@db.example.com:3307/shop?sslmode=verify-full`);
    expect(dsn).toEqual({
      host: 'db.example.com',
      port: 3307,
      database: 'shop',
      user: 'app',
      sslmode: 'verify-full',
      password: SECRET,
      sslpassword: undefined,
      publicDsn: 'mysql://app@db.example.com:3307/shop?sslmode=verify-full',
    });
    expect(maskDsn(dsn.publicDsn, { password: true, sslpassword: false })).toBe(
      'mysql://app:****@db.example.com:3307/shop?sslmode=verify-full',
    );
  });

  it('accepts mariadb://, defaults the port to 3306, decodes percent-encoding and IPv6 hosts', () => {
    expect(parseMysqlDsn('mariadb://u%40x:p%2Fw@[::1]/my%20db')).toMatchObject({
      host: '::1',
      port: 3306,
      database: 'my db',
      user: 'u@x',
      password: 'p/w',
      sslmode: undefined,
    });
  });

  it.each([
    ['postgres://u@h/db', 'scheme must be mysql:// or mariadb://'],
    ['mysql://u@/db', 'must be a URL'],
    ['mysql:///db', 'must name a host'],
    ['mysql://u@h', 'must name one database'],
    ['mysql://u@h/a/b', 'must name one database'],
    ['mysql://h/db', 'must name a user'],
    ['mysql://u@h:0/db', 'port must be 1 to 65535'],
    ['mysql://u@h:70000/db', 'must be a URL'],
    ['mysql://u@h/db#x', '#fragment'],
    ['mysql://u@h/db?sslmode=prefer', 'sslmode must be one of disable, require, verify-ca, verify-full'],
    ['mysql://u@%2Fvar%2Frun%2Fmysqld.sock/db', 'Unix socket'],
    ['mysql://u@h/db?sslmode=require&sslmode=disable', "parameter 'sslmode' is given twice"],
    ['not a url', 'must be a URL'],
  ])('refuses %s', (dsn, problem) => {
    const error = refusal(dsn);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.message).toContain(problem);
  });

  it.each([
    ['socketPath', 'Unix socket'],
    ['socket', 'Unix socket'],
    ['localInfile', 'read files'],
    ['infileStreamFactory', 'read files'],
    ['flags', 'set by the service'],
    ['multipleStatements', 'one statement at a time'],
    ['ssl', 'use sslmode'],
    ['sslca', 'tls.ca_cert'],
    ['password', 'user part'],
    ['host', 'in the URL'],
    ['charset', 'utf8mb4'],
    ['whatever', 'is not supported (supported: sslmode)'],
  ])('refuses the parameter %s by name, without echoing its value', (key, why) => {
    const error = refusal(`mysql://u:${SECRET}@h/db?${key}=${SECRET}-value`);
    expect(error.message).toContain(`parameter '${key}'`);
    expect(error.message).toContain(why);
    expect(error.message).not.toContain(SECRET);
  });

  it('never echoes the password or a parameter value in a refusal', () => {
    const bad = fc.constantFrom(
      (p: string) => `mysql://u:${p}@/db`,
      (p: string) => `mysql://u:${p}@h/db?x=${p}`,
      (p: string) => `mysql://u:${p}@h:99999/db`,
      (p: string) => `mysql://u:${p}@h/db?sslmode=${p}`,
      (p: string) => `mysql://:${p}@h/db`,
      (p: string) => `postgres://u:${p}@h/db`,
    );
    fc.assert(
      fc.property(bad, fc.stringMatching(/^[A-Za-z0-9]{12,30}$/), (make, password) => {
        const error = refusal(make(password));
        expect(error.message).not.toContain(password);
      }),
    );
  });

  it('binds a stored secret to host, port, database and user', () => {
    const base = mysqlEndpointOf('mysql://u@h:3306/db');
    expect(mysqlEndpointOf('mysql://u@h/db')).toBe(base);
    expect(mysqlEndpointOf('mysql://u@h/db?sslmode=require')).toBe(base);
    for (const other of ['mysql://u@evil/db', 'mysql://u@h:3307/db', 'mysql://u@h/db2', 'mysql://v@h/db']) {
      expect(mysqlEndpointOf(other)).not.toBe(base);
    }
  });
});

describe('mysql TLS and connection options', () => {
  const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

  it('refuses TLS material unless the DSN encrypts, and verify-ca without a CA', () => {
    const plain = parseMysqlDsn('mysql://u@h/db');
    expect(() => checkMysqlTls(plain, { ca_cert: CA })).toThrow(
      /tls.ca_cert: is given but the DSN does not encrypt/,
    );
    const off = parseMysqlDsn('mysql://u@h/db?sslmode=disable');
    expect(() => checkMysqlTls(off, { client_cert: CA })).toThrow(/does not encrypt/);
    const verifyCa = parseMysqlDsn('mysql://u@h/db?sslmode=verify-ca');
    expect(() => checkMysqlTls(verifyCa, {})).toThrow(/tls.ca_cert: is required by sslmode=verify-ca/);
    expect(() => checkMysqlTls(verifyCa, { ca_cert: CA })).not.toThrow();
    expect(() => checkMysqlTls(parseMysqlDsn('mysql://u@h/db?sslmode=require'), {})).not.toThrow();
  });

  it('makes explicit mysql2 options: the password, no local files, one statement, TLS by sslmode', async () => {
    const options = await mysqlConnectionType.settings(
      'mysql://app@h:3307/db',
      { password: SECRET, tls: {} },
      NO_LOCAL_ACCESS,
    );
    expect(options).toEqual({
      host: 'h',
      port: 3307,
      database: 'db',
      user: 'app',
      password: SECRET,
      connectTimeout: 10_000,
      flags: ['-LOCAL_FILES'],
      multipleStatements: false,
      charset: 'utf8mb4',
    });
    const ssl = (mode: string, tls = {}) =>
      mysqlConnectionOptions(parseMysqlDsn(`mysql://u@h/db?sslmode=${mode}`), { tls }).ssl;
    expect(ssl('disable')).toBeUndefined();
    expect(ssl('require')).toEqual({ rejectUnauthorized: false, verifyIdentity: false });
    expect(ssl('require', { ca_cert: CA })).toEqual({
      ca: CA,
      rejectUnauthorized: true,
      verifyIdentity: false,
    });
    expect(ssl('verify-ca', { ca_cert: CA })).toEqual({
      ca: CA,
      rejectUnauthorized: true,
      verifyIdentity: false,
    });
    expect(ssl('verify-full', { ca_cert: CA, client_cert: 'C', client_key: 'K' })).toEqual({
      ca: CA,
      cert: 'C',
      key: 'K',
      rejectUnauthorized: true,
      verifyIdentity: true,
    });
  });

  it('re-checks a stored DSN when making the settings', async () => {
    await expect(
      mysqlConnectionType.settings('mysql://u@h/db?socketPath=/tmp/x', { tls: {} }, NO_LOCAL_ACCESS),
    ).rejects.toThrow(/parameter 'socketPath'/);
  });
});
