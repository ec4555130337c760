import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { endpointOf, parsePostgresDsn } from '../../src/connections/postgres-dsn.js';
import { AppError } from '../../src/errors/app-error.js';

const parse = (dsn: string) => parsePostgresDsn(dsn, NO_LOCAL_ACCESS);

function refusal(dsn: string, policy = NO_LOCAL_ACCESS): AppError {
  try {
    parsePostgresDsn(dsn, policy);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

// Every connection parameter libpq documents, and the extra ones node-postgres reads from a URL.
const LIBPQ_PARAMETERS = [
  'host',
  'hostaddr',
  'port',
  'dbname',
  'user',
  'passfile',
  'require_auth',
  'channel_binding',
  'connect_timeout',
  'client_encoding',
  'options',
  'application_name',
  'fallback_application_name',
  'keepalives',
  'keepalives_idle',
  'keepalives_interval',
  'keepalives_count',
  'tcp_user_timeout',
  'replication',
  'gssencmode',
  'sslnegotiation',
  'sslcompression',
  'sslcrl',
  'sslcrldir',
  'sslsni',
  'requirepeer',
  'ssl_min_protocol_version',
  'ssl_max_protocol_version',
  'krbsrvname',
  'gsslib',
  'gssdelegation',
  'service',
  'servicefile',
  'target_session_attrs',
  'load_balance_hosts',
  'sslcertmode',
  'requiressl',
];
const NODE_PG_PARAMETERS = [
  'ssl',
  'uselibpqcompat',
  'db',
  'encoding',
  'statement_timeout',
  'query_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'connectionTimeoutMillis',
  'keepAlive',
  'stream',
  'types',
  'binary',
  'Promise',
  'password_function',
  'max',
  'idleTimeoutMillis',
];

describe('postgres DSN allow-list', () => {
  it('takes the password out, decoded, and keeps the rest as the public DSN', () => {
    const dsn = parse('postgres://al%40ice:p%40ss%3Aw%2Frd+x@db:5432/shop?sslmode=require');
    expect(dsn).toMatchObject({
      host: 'db',
      port: 5432,
      user: 'al@ice',
      database: 'shop',
      password: 'p@ss:w/rd+x',
      sslmode: 'require',
      publicDsn: 'postgres://al%40ice@db:5432/shop?sslmode=require',
    });
  });

  it('takes password and sslpassword from the query, percent-decoding only', () => {
    const dsn = parse('postgresql://u@h/db?password=a+b%26c&sslmode=disable&sslpassword=k%3D1');
    expect(dsn.password).toBe('a+b&c');
    expect(dsn.sslpassword).toBe('k=1');
    expect(dsn.publicDsn).toBe('postgresql://u@h/db?sslmode=disable');
  });

  it('defaults the port and reads IPv6 hosts', () => {
    expect(parse('postgres://u@[::1]/db')).toMatchObject({ host: '::1', port: 5432, socket: false });
  });

  it('masks password and sslpassword for display', () => {
    expect(maskDsn('postgres://u@h/db?sslmode=require', { password: true, sslpassword: true })).toBe(
      'postgres://u:****@h/db?sslmode=require&sslpassword=****',
    );
    expect(maskDsn('postgres://u@h/db', { password: false, sslpassword: false })).toBe('postgres://u@h/db');
  });

  it('binds secrets to host, port, database and user', () => {
    const base = endpointOf('postgres://u@h:5432/db?sslmode=require');
    expect(endpointOf('postgres://u@H/db')).toBe(base);
    expect(endpointOf('postgres://u@evil/db')).not.toBe(base);
    expect(endpointOf('postgres://u@h:5433/db')).not.toBe(base);
    expect(endpointOf('postgres://u@h/other')).not.toBe(base);
    expect(endpointOf('postgres://v@h/db')).not.toBe(base);
    expect(endpointOf('postgres://u@/db?host=/tmp')).not.toBe(endpointOf('postgres://u@/db?host=/run'));
    expect(endpointOf('not a url')).not.toBe(endpointOf('not a url either'));
  });

  it.each([
    ['', 'must be a URL'],
    ['h/db', 'must be a URL'],
    ['http://u@h/db', 'scheme must be postgres:// or postgresql://'],
    ['postgres://u@/db', 'must name a host'],
    ['postgres://u@h', 'must name one database'],
    ['postgres://u@h/a/b', 'must name one database'],
    ['postgres://h/db', 'must name a user'],
    ['postgres://u:p@h/db?password=q', 'both in the user part and in the query'],
    ['postgres://u@h/db?sslmode=require&sslmode=disable', "'sslmode' is given twice"],
    ['postgres://u@h/db?sslmode=prefer', 'silently falls back'],
    ['postgres://u@h/db?sslmode=allow', 'silently falls back'],
    ['postgres://u@h/db?sslmode=maybe', 'sslmode must be one of'],
    ['postgres://u@h/db?sslrootcert=system&sslmode=require', 'sslrootcert=system needs sslmode=verify-full'],
    ['postgres://u@h/db#x', 'fragment'],
    ['postgres://u@h/d%ZZb', 'not valid percent-encoding'],
  ])('refuses %j', (dsn, message) => {
    const error = refusal(dsn);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.status).toBe(422);
    expect(error.message).toContain(message);
  });

  it.each([
    ['a NUL in the raw text', 'postgres://u@h/db\u0000?x'],
    ['a line feed in the raw text', 'postgres://u@h/db\n'],
    ['an encoded NUL in the user', 'postgres://u%00replication=database@h/db'],
    ['an encoded CR LF in the database', 'postgres://u@h/db%0D%0Auser'],
    ['an encoded NUL in a parameter value', 'postgres://u@h/db?sslmode=require%00'],
    ['an encoded NUL in the password', 'postgres://u:pw%00x@h/db'],
  ])('refuses control characters: %s', (_what, dsn) => {
    expect(refusal(dsn).message).toMatch(/control character/);
  });

  it('refuses Unix sockets unless the operator allows them', () => {
    for (const dsn of [
      'postgres://postgres@/postgres?host=/tmp',
      'postgres://postgres@%2Ftmp/postgres',
      'postgres://postgres@%2Fvar%2Frun%2Fpostgresql:5432/postgres',
    ]) {
      expect(refusal(dsn).message).toContain('connections.allow_unix_sockets');
    }
    const allowed = { ...NO_LOCAL_ACCESS, allowUnixSockets: true };
    expect(parsePostgresDsn('postgres://postgres@/postgres?host=/tmp', allowed)).toMatchObject({
      host: '/tmp',
      socket: true,
    });
    expect(refusal('postgres://u@h/db?host=/tmp', allowed).message).toContain("'host'");
  });

  it('refuses file paths without touching the file system, naming the PEM field to use instead', () => {
    for (const [key, field] of [
      ['sslrootcert', 'tls.ca_cert'],
      ['sslcert', 'tls.client_cert'],
      ['sslkey', 'tls.client_key'],
    ]) {
      for (const path of ['/dev/zero', '/no/such/file', '../../etc/passwd', 'ca.pem']) {
        const error = refusal(`postgres://u@h/db?sslmode=verify-full&${key}=${encodeURIComponent(path)}`);
        expect(error.message).toContain(field);
        expect(error.message).not.toContain(path);
      }
    }
    expect(parse('postgres://u@h/db?sslrootcert=system').sslmode).toBe('verify-full');
  });

  it('accepts file names inside the operator TLS directory only', () => {
    const policy = { ...NO_LOCAL_ACCESS, tlsFileDir: '/etc/replicator/tls' };
    expect(
      parsePostgresDsn('postgres://u@h/db?sslmode=verify-full&sslrootcert=ca.pem', policy).sslrootcert,
    ).toBe('ca.pem');
    for (const path of ['../secret', '/etc/passwd', '/etc/replicator/tls/../x', '']) {
      expect(
        refusal(`postgres://u@h/db?sslmode=verify-full&sslrootcert=${encodeURIComponent(path)}`, policy)
          .message,
      ).toContain('inside connections.tls_file_dir');
    }
  });

  it.each([...LIBPQ_PARAMETERS, ...NODE_PG_PARAMETERS])('refuses the parameter %s by name', (key) => {
    const error = refusal(`postgres://u@h/db?${key}=1`);
    expect(error.code).toBe('INVALID_DSN');
    expect(error.message).toContain(`'${key}'`);
  });

  it('never echoes a parameter value, and shortens a long name', () => {
    const error = refusal(`postgres://u@h/db?${'k'.repeat(1000)}=secret-value`);
    expect(error.message).not.toContain('secret-value');
    expect(error.message.length).toBeLessThan(300);
  });
});
