import { isIP } from 'node:net';
import type { CheckedDsn } from '../../connections/connection-types.js';
import { decode, hasControl, invalidDsn, shown } from '../../connections/dsn-text.js';

/** A NATS DSN that passed the allow-list: every field the service will connect with. */
export interface NatsDsn extends CheckedDsn {
  /** `tls://`: TLS, verifying the server's certificate and host name. */
  tls: boolean;
  /** Host name or IP address (an IPv6 address without its brackets). */
  host: string;
  port: number;
  /** User of user/password authentication; undefined for a token or no authentication. */
  user: string | undefined;
  /** The password of `user`, or a token when there is no user. */
  password: string | undefined;
  /** NATS has no encrypted-key passphrase in its DSN. */
  sslpassword: undefined;
}

export const NATS_DEFAULT_PORT = 4222;

const EXAMPLE = 'nats://user:password@host:4222';

// Parameters and options other NATS clients know, refused with what to do instead; any other is refused too.
const UNSUPPORTED: Record<string, string> = {
  user: `put the user in the user part (${EXAMPLE})`,
  pass: `put the password in the user part (${EXAMPLE})`,
  password: `put the password in the user part (${EXAMPLE})`,
  token: 'give a token as the password with no user (nats://:token@host:4222)',
  tls: 'use the tls:// scheme for TLS',
  tls_required: 'use the tls:// scheme for TLS',
  servers: 'one server per connection',
  creds: 'credentials files are not supported',
  nkey: 'NKey authentication is not supported',
  jwt: 'JWT authentication is not supported',
  name: 'the service names its own connections',
};

function parseUrl(dsn: string): URL {
  try {
    return new URL(dsn);
  } catch {
    throw invalidDsn(`must be a URL such as ${EXAMPLE}`);
  }
}

// Letters, digits, hyphens and dots: a host name, never a path, a list or anything to escape.
const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/;

/**
 * Checks a NATS DSN, `nats://[user[:password]@]host[:port]` or `tls://` for TLS, without touching
 * the network: one server (no list, no Unix socket, no WebSocket), a port, no path and no query
 * parameters. A password with no user (`nats://:token@host`) is a token. Every refusal is a 422
 * INVALID_DSN naming the part, never echoing a value. The public DSN is the same URL without its
 * password, and passes here too.
 */
export function parseNatsDsn(dsn: string): NatsDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  if (/^unix:/i.test(dsn)) {
    throw invalidDsn('names a Unix socket on the service machine; give a host and port instead');
  }
  if (/^wss?:/i.test(dsn)) throw invalidDsn('WebSocket connections are not supported; use nats:// or tls://');
  const url = parseUrl(dsn);
  if (url.protocol !== 'nats:' && url.protocol !== 'tls:') {
    throw invalidDsn('scheme must be nats:// or tls:// (TLS)');
  }
  if (url.hash !== '') throw invalidDsn('must not have a #fragment');
  const search = url.search.replace(/^\?/, '');
  if (search !== '') {
    const first = search.split('&')[0] as string;
    const key = decode(first.split('=')[0] as string, 'parameter name');
    const why = UNSUPPORTED[key] ?? 'is not supported: a nats DSN takes no parameters';
    throw invalidDsn(`parameter '${shown(key)}' ${why}`);
  }
  if (url.pathname !== '' && url.pathname !== '/') {
    throw invalidDsn(`must not have a path: a NATS DSN names one server, e.g. ${EXAMPLE}`);
  }

  const host = decode(url.hostname, 'host').replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalidDsn(`must name a host, e.g. ${EXAMPLE}`);
  if (host.includes(',')) throw invalidDsn('must name one server: a list of servers is not supported');
  if (host.includes('/')) {
    throw invalidDsn('names a Unix socket on the service machine; give a host and port instead');
  }
  if (hasControl(host)) throw invalidDsn('the host contains a control character');
  if (isIP(host) === 0 && !HOST_NAME.test(host)) {
    throw invalidDsn('the host must be a host name or an IP address');
  }

  const port = url.port === '' ? NATS_DEFAULT_PORT : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidDsn('port must be 1 to 65535');

  const user = url.username === '' ? undefined : decode(url.username, 'user');
  if (user !== undefined && hasControl(user)) throw invalidDsn('the user contains a control character');
  const password = url.password === '' ? undefined : decode(url.password, 'password');
  if (password !== undefined && hasControl(password)) {
    throw invalidDsn('the password contains a control character');
  }
  url.password = '';
  return {
    tls: url.protocol === 'tls:',
    host,
    port,
    user,
    password,
    sslpassword: undefined,
    publicDsn: url.toString(),
  };
}

/**
 * Checks a DSN as given for a connection: the allow-list, and a password with every user. NATS
 * clients read a user part alone as a token, which would then be stored in clear.
 */
export function checkNatsDsn(dsn: string): NatsDsn {
  const parsed = parseNatsDsn(dsn);
  if (parsed.user !== undefined && parsed.password === undefined) {
    throw invalidDsn(
      'a user needs a password (nats://user:password@host); give a token as the password with no user (nats://:token@host)',
    );
  }
  return parsed;
}

/**
 * What a stored secret is bound to: scheme, host, port and user. Read leniently, as a stored row
 * may no longer pass the allow-list; one that cannot be read matches no other DSN.
 */
export function natsEndpointOf(dsn: string): string {
  try {
    const url = new URL(dsn);
    return JSON.stringify([
      url.protocol,
      url.hostname.toLowerCase(),
      url.port || String(NATS_DEFAULT_PORT),
      url.username,
    ]);
  } catch {
    return `\u0000${dsn}`;
  }
}
