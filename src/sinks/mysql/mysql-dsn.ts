import { decode, hasControl, invalidDsn, refuseUnlistedParams, shown } from '../../connections/dsn-text.js';

/** The TLS modes of a mysql DSN, with libpq's meaning (see `mysqlConnectionOptions`). */
export const MYSQL_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type MysqlSslMode = (typeof MYSQL_SSL_MODES)[number];

/** A MySQL / MariaDB DSN that passed the allow-list: every field the service will connect with. */
export interface MysqlDsn {
  /** Host name or IP address; never a socket. */
  host: string;
  port: number;
  database: string;
  user: string;
  sslmode: MysqlSslMode | undefined;
  password: string | undefined;
  /** Always undefined: an encrypted client key is not supported for mysql. */
  sslpassword: undefined;
  /** The DSN without its password: what is stored in clear. */
  publicDsn: string;
}

/** Query parameters a mysql DSN may carry; anything else is refused by name. */
const ALLOWED = ['sslmode'] as const;

const GIVE_IN_URL = 'give it in the URL (mysql://user:password@host:3306/database)';

// Parameters of mysql2 or other MySQL clients that are refused, with what to do instead.
const UNSUPPORTED: Record<string, string> = {
  socketPath: 'names a Unix socket on the service machine; sockets are not supported for mysql',
  socket: 'names a Unix socket on the service machine; sockets are not supported for mysql',
  localInfile: 'would let the server read files of the service machine',
  infileStreamFactory: 'would let the server read files of the service machine',
  flags: 'connection flags are set by the service',
  multipleStatements: 'the service sends one statement at a time',
  ssl: 'use sslmode',
  ssl_mode: 'use sslmode',
  sslca: 'give the CA certificate as PEM text in tls.ca_cert',
  sslcert: 'give the client certificate as PEM text in tls.client_cert',
  sslkey: 'give the client key as PEM text in tls.client_key',
  password: 'give the password in the user part of the URL (mysql://user:password@host/db)',
  host: GIVE_IN_URL,
  port: GIVE_IN_URL,
  user: GIVE_IN_URL,
  database: GIVE_IN_URL,
  charset: 'the service always uses utf8mb4',
  timezone: 'the service always uses UTC',
  connectTimeout: 'the service sets its own timeouts',
};

function queryParams(search: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const pair of search.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const key = decode(at < 0 ? pair : pair.slice(0, at), 'parameter name');
    const value = decode(at < 0 ? '' : pair.slice(at + 1), `value of '${shown(key)}'`);
    if (hasControl(key)) throw invalidDsn('a parameter name contains a control character');
    if (params.has(key)) throw invalidDsn(`parameter '${shown(key)}' is given twice`);
    params.set(key, value);
  }
  return params;
}

function parseUrl(dsn: string): URL {
  try {
    return new URL(dsn);
  } catch {
    throw invalidDsn('must be a URL such as mysql://user:password@host:3306/database');
  }
}

/**
 * Checks a MySQL / MariaDB DSN (`mysql://` or `mariadb://`) against the allow-list without
 * touching the network or the file system: a host (never a Unix socket), a port, one database, a
 * user, and only the `sslmode` parameter. TLS material is given as PEM text with the connection,
 * never as files. Every refusal is a 422 INVALID_DSN naming the part, never echoing a value.
 */
export function parseMysqlDsn(dsn: string): MysqlDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  const url = parseUrl(dsn);
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw invalidDsn('scheme must be mysql:// or mariadb://');
  }
  if (url.hash !== '') throw invalidDsn('must not have a #fragment');

  const params = queryParams(url.search);
  refuseUnlistedParams(params.keys(), ALLOWED, UNSUPPORTED);

  // A percent-encoded slash in the host is how some clients spell a socket path.
  if (/%2f/i.test(url.hostname) || url.hostname.startsWith('/')) {
    throw invalidDsn('names a Unix socket on the service machine; sockets are not supported for mysql');
  }
  const host = decode(url.hostname, 'host').replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalidDsn('must name a host, e.g. mysql://user@host:3306/mydb');
  if (hasControl(host)) throw invalidDsn('the host contains a control character');

  const port = url.port === '' ? 3306 : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidDsn('port must be 1 to 65535');

  const database = decode(url.pathname.replace(/^\//, ''), 'database');
  if (database === '' || database.includes('/')) {
    throw invalidDsn('must name one database in its path, e.g. mysql://user@host:3306/mydb');
  }
  if (hasControl(database)) throw invalidDsn('the database contains a control character');
  const user = decode(url.username, 'user');
  if (user === '') throw invalidDsn('must name a user, e.g. mysql://user@host:3306/mydb');
  if (hasControl(user)) throw invalidDsn('the user contains a control character');

  const password = url.password === '' ? undefined : decode(url.password, 'password');
  if (password?.includes('\u0000')) throw invalidDsn('the password contains a NUL character');

  url.password = '';
  return {
    host,
    port,
    database,
    user,
    sslmode: sslModeOf(params.get('sslmode')),
    password,
    sslpassword: undefined,
    publicDsn: url.toString(),
  };
}

function sslModeOf(value: string | undefined): MysqlSslMode | undefined {
  if (value === undefined) return undefined;
  if ((MYSQL_SSL_MODES as readonly string[]).includes(value)) return value as MysqlSslMode;
  throw invalidDsn(`sslmode must be one of ${MYSQL_SSL_MODES.join(', ')}`);
}

/**
 * What a stored secret is bound to: host, port, database and user of a DSN, read leniently from
 * a stored DSN; one that cannot be read at all matches no other DSN.
 */
export function mysqlEndpointOf(dsn: string): string {
  try {
    const url = new URL(dsn);
    return JSON.stringify([url.hostname.toLowerCase(), url.port || '3306', url.pathname, url.username]);
  } catch {
    return `\u0000${dsn}`;
  }
}
