import type { CheckedDsn } from '../../connections/connection-types.js';
import { decode, hasControl, invalidDsn, shown } from '../../connections/dsn-text.js';

/** A Redis DSN that passed the allow-list: every field the service will connect with. */
export interface RedisDsn extends CheckedDsn {
  /** `rediss://`: TLS, verifying the server's certificate and host name. */
  tls: boolean;
  /** Host name or IP address (an IPv6 address without its brackets). */
  host: string;
  port: number;
  /** Logical database number, 0..15. */
  db: number;
  /** ACL user; undefined for the `default` user (a password-only `redis://:password@host`). */
  username: string | undefined;
  password: string | undefined;
  /** Redis has no encrypted-key passphrase in its DSN. */
  sslpassword: undefined;
}

export const REDIS_DEFAULT_PORT = 6379;
const MAX_DB = 15;

// Parameters other clients know, refused with what to do instead; any other is refused too.
const UNSUPPORTED: Record<string, string> = {
  password: 'put the password in the user part (redis://user:password@host:6379/0)',
  username: 'put the user in the user part (redis://user:password@host:6379/0)',
  db: 'give the database number in the path (redis://host:6379/0)',
  tls: 'use the rediss:// scheme for TLS',
  ssl: 'use the rediss:// scheme for TLS',
  ssl_cert_reqs: 'rediss:// always verifies the server certificate; give tls.ca_cert for a private CA',
  family: 'the address family follows the host',
  socket: 'Unix sockets are refused',
  path: 'Unix sockets are refused',
};

function parseUrl(dsn: string): URL {
  try {
    return new URL(dsn);
  } catch {
    throw invalidDsn('must be a URL such as redis://user:password@host:6379/0');
  }
}

/**
 * Checks a Redis DSN, `redis://[user[:password]@]host[:port][/db]` or `rediss://` for TLS, without
 * touching the network: a host (no Unix socket), a port, a database number 0..15 as the path, and
 * no query parameters. Every refusal is a 422 INVALID_DSN naming the part, never echoing a value.
 * The public DSN is the same URL without its password.
 */
export function parseRedisDsn(dsn: string): RedisDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  if (/^(redis\+unix|unix):/i.test(dsn)) {
    throw invalidDsn('names a Unix socket on the service machine; give a host and port instead');
  }
  const url = parseUrl(dsn);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw invalidDsn('scheme must be redis:// or rediss:// (TLS)');
  }
  if (url.hash !== '') throw invalidDsn('must not have a #fragment');
  const search = url.search.replace(/^\?/, '');
  if (search !== '') {
    const first = search.split('&')[0] as string;
    const key = decode(first.split('=')[0] as string, 'parameter name');
    const why = UNSUPPORTED[key] ?? 'is not supported: a redis DSN takes no parameters';
    throw invalidDsn(`parameter '${shown(key)}' ${why}`);
  }

  const host = decode(url.hostname, 'host').replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalidDsn('must name a host, e.g. redis://host:6379/0');
  if (host.includes('/')) {
    throw invalidDsn('names a Unix socket on the service machine; give a host and port instead');
  }
  if (hasControl(host)) throw invalidDsn('the host contains a control character');

  const port = url.port === '' ? REDIS_DEFAULT_PORT : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidDsn('port must be 1 to 65535');

  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d{1,2}$/.test(path)) {
    throw invalidDsn(`the path must be a database number from 0 to ${MAX_DB}, e.g. redis://host:6379/0`);
  }
  const db = path === '' ? 0 : Number(path);
  if (db > MAX_DB) throw invalidDsn(`the database number must be from 0 to ${MAX_DB}`);

  const username = url.username === '' ? undefined : decode(url.username, 'user');
  if (username !== undefined && hasControl(username))
    throw invalidDsn('the user contains a control character');
  const password = url.password === '' ? undefined : decode(url.password, 'password');
  if (password?.includes('\u0000')) throw invalidDsn('the password contains a NUL character');

  url.password = '';
  return {
    tls: url.protocol === 'rediss:',
    host,
    port,
    db,
    username,
    password,
    sslpassword: undefined,
    publicDsn: url.toString(),
  };
}

/**
 * What a stored secret is bound to: scheme, host, port, database and user. Read leniently, as a
 * stored row may no longer pass the allow-list; one that cannot be read matches no other DSN.
 */
export function redisEndpointOf(dsn: string): string {
  try {
    const url = new URL(dsn);
    const db = url.pathname.replace(/^\//, '') || '0';
    return JSON.stringify([
      url.protocol,
      url.hostname.toLowerCase(),
      url.port || String(REDIS_DEFAULT_PORT),
      db,
      url.username,
    ]);
  } catch {
    return `\u0000${dsn}`;
  }
}
