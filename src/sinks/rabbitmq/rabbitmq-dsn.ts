import type { CheckedDsn } from '../../connections/connection-types.js';
import { decode, hasControl, invalidDsn, refuseUnlistedParams, shown } from '../../connections/dsn-text.js';

/** A RabbitMQ DSN that passed the allow-list: every field the service will connect with. */
export interface RabbitmqDsn extends CheckedDsn {
  /** `amqps://`: TLS, verifying the server's certificate and host name. */
  tls: boolean;
  /** Host name or IP address (an IPv6 address without its brackets). */
  host: string;
  port: number;
  /** Virtual host, decoded; `/` when the DSN names none. */
  vhost: string;
  user: string;
  password: string | undefined;
  /** Heartbeat interval the client asks for, in seconds; undefined for the service's default. */
  heartbeat: number | undefined;
  /** RabbitMQ has no encrypted-key passphrase in its DSN. */
  sslpassword: undefined;
}

export const AMQP_DEFAULT_PORT = 5672;
export const AMQPS_DEFAULT_PORT = 5671;
export const HEARTBEAT_MAX_SECONDS = 3600;

/** Query parameters an amqp DSN may carry; anything else is refused by name. */
const ALLOWED = ['heartbeat'] as const;

const IN_URL = 'give it in the URL (amqp://user:password@host:5672/vhost)';

// Parameters of the RabbitMQ URI spec or of amqplib that are refused, with what to do instead.
const UNSUPPORTED: Record<string, string> = {
  password: 'put the password in the user part (amqp://user:password@host:5672/vhost)',
  username: IN_URL,
  user: IN_URL,
  host: IN_URL,
  port: IN_URL,
  vhost: 'give the virtual host as the path, %2F for / (amqp://host:5672/%2F)',
  cacertfile: 'give the CA certificate as PEM text in tls.ca_cert',
  certfile: 'give the client certificate as PEM text in tls.client_cert',
  keyfile: 'give the client key as PEM text in tls.client_key',
  verify: 'amqps:// always verifies the server certificate; give tls.ca_cert for a private CA',
  fail_if_no_peer_cert: 'amqps:// always verifies the server certificate',
  server_name_indication: 'the TLS server name follows the host',
  auth_mechanism: 'the service signs in with the user and password (PLAIN)',
  frameMax: 'the service sets the frame size',
  frame_max: 'the service sets the frame size',
  maxFrameSize: 'the service sets the frame size',
  channelMax: 'the service sets the channel limit',
  channel_max: 'the service sets the channel limit',
  connection_timeout: 'the service sets its own timeouts',
  locale: 'the service always uses en_US',
};

function parseUrl(dsn: string): URL {
  try {
    return new URL(dsn);
  } catch {
    throw invalidDsn('must be a URL such as amqp://user:password@host:5672/vhost');
  }
}

function queryParams(search: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const pair of search.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const key = decode(at < 0 ? pair : pair.slice(0, at), 'parameter name');
    if (hasControl(key)) throw invalidDsn('a parameter name contains a control character');
    const value = decode(at < 0 ? '' : pair.slice(at + 1), `value of '${shown(key)}'`);
    if (params.has(key)) throw invalidDsn(`parameter '${shown(key)}' is given twice`);
    params.set(key, value);
  }
  return params;
}

function heartbeatOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(seconds >= 1 && seconds <= HEARTBEAT_MAX_SECONDS)) {
    throw invalidDsn(`heartbeat must be a whole number of seconds from 1 to ${HEARTBEAT_MAX_SECONDS}`);
  }
  return seconds;
}

/**
 * Checks a RabbitMQ DSN, `amqp://user[:password]@host[:port][/vhost]` or `amqps://` for TLS,
 * without touching the network: a host, a port, one virtual host as the path (percent-encoded, `%2F`
 * for `/`) and only the `heartbeat` parameter. Every refusal is a 422 INVALID_DSN naming the part,
 * never echoing a value. The public DSN is the same URL without its password.
 */
export function parseRabbitmqDsn(dsn: string): RabbitmqDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  const url = parseUrl(dsn);
  if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') {
    throw invalidDsn('scheme must be amqp:// or amqps:// (TLS)');
  }
  if (url.hash !== '') throw invalidDsn('must not have a #fragment');

  const params = queryParams(url.search);
  refuseUnlistedParams(params.keys(), ALLOWED, UNSUPPORTED);

  if (!dsn.slice(url.protocol.length).startsWith('//')) {
    throw invalidDsn('must name a host, e.g. amqp://user@host:5672/vhost');
  }
  const host = decode(url.hostname, 'host').replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalidDsn('must name a host, e.g. amqp://user@host:5672/vhost');
  if (host.includes('/')) throw invalidDsn('names a Unix socket; give a host and port instead');
  if (hasControl(host) || /[\s%]/.test(host)) throw invalidDsn('the host is not a valid host name');

  const tls = url.protocol === 'amqps:';
  const port = url.port === '' ? (tls ? AMQPS_DEFAULT_PORT : AMQP_DEFAULT_PORT) : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidDsn('port must be 1 to 65535');

  const path = url.pathname.replace(/^\//, '');
  if (path.includes('/')) {
    throw invalidDsn('the path must be one virtual host; write a slash in its name as %2F');
  }
  const vhost = path === '' ? '/' : decode(path, 'virtual host');
  if (hasControl(vhost)) throw invalidDsn('the virtual host contains a control character');

  const user = decode(url.username, 'user');
  if (user === '') throw invalidDsn('must name a user, e.g. amqp://user:password@host:5672/vhost');
  if (hasControl(user)) throw invalidDsn('the user contains a control character');
  const password = url.password === '' ? undefined : decode(url.password, 'password');
  if (password?.includes('\u0000')) throw invalidDsn('the password contains a NUL character');

  const heartbeat = heartbeatOf(params.get('heartbeat'));
  url.password = '';
  return {
    tls,
    host,
    port,
    vhost,
    user,
    password,
    heartbeat,
    sslpassword: undefined,
    publicDsn: url.toString(),
  };
}

/**
 * What a stored secret is bound to: scheme, host, port, virtual host and user. Read leniently, as
 * a stored row may no longer pass the allow-list; one that cannot be read matches no other DSN.
 */
export function rabbitmqEndpointOf(dsn: string): string {
  try {
    const url = new URL(dsn);
    const tls = url.protocol === 'amqps:';
    let vhost = url.pathname.replace(/^\//, '');
    try {
      vhost = vhost === '' ? '/' : decodeURIComponent(vhost);
    } catch {
      // Kept encoded: it still tells this endpoint apart.
    }
    return JSON.stringify([
      url.protocol,
      url.hostname.toLowerCase(),
      url.port || String(tls ? AMQPS_DEFAULT_PORT : AMQP_DEFAULT_PORT),
      vhost,
      url.username,
    ]);
  } catch {
    return `\u0000${dsn}`;
  }
}
