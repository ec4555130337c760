import { isAbsolute, relative, resolve } from 'node:path';
import { decode, hasControl, invalidDsn, refuseUnlistedParams, shown } from './dsn-text.js';
import type { LocalAccessPolicy } from './local-access.js';

/** The TLS modes the service honours; `prefer` and `allow` are refused (see UNSUPPORTED). */
export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A PostgreSQL DSN that passed the allow-list: every field the service will connect with. */
export interface PostgresDsn {
  /** Host name or IP address, or the directory of a Unix socket when `socket` is true. */
  host: string;
  socket: boolean;
  port: number;
  database: string;
  user: string;
  sslmode: SslMode | undefined;
  /** `system` (the platform's trusted CAs) or a file inside the operator's TLS directory. */
  sslrootcert: string | undefined;
  /** Client certificate and key files inside the operator's TLS directory. */
  sslcert: string | undefined;
  sslkey: string | undefined;
  password: string | undefined;
  /** Passphrase of an encrypted client key. */
  sslpassword: string | undefined;
  /** The DSN without its secrets (password, sslpassword): what is stored in clear. */
  publicDsn: string;
}

/** Query parameters a postgres DSN may carry; anything else is refused by name. */
const ALLOWED = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'sslpassword', 'password'] as const;

// Parameters libpq or node-postgres know that are refused, with what to do instead.
const FILE_READERS = 'reads a file on the service machine';
const UNSUPPORTED: Record<string, string> = {
  passfile: `${FILE_READERS}; put the password in the DSN`,
  service: `${FILE_READERS} (pg_service.conf); write the full DSN`,
  servicefile: `${FILE_READERS}; write the full DSN`,
  sslcrl: `${FILE_READERS} and is not supported`,
  sslcrldir: `${FILE_READERS} and is not supported`,
  host: 'give the host in the URL (postgres://user@host:5432/db)',
  hostaddr: 'give the host in the URL (postgres://user@host:5432/db)',
  port: 'give the port in the URL (postgres://user@host:5432/db)',
  user: 'give the user in the URL (postgres://user@host:5432/db)',
  dbname: 'give the database in the URL path (postgres://user@host:5432/db)',
  db: 'give the database in the URL path (postgres://user@host:5432/db)',
  options: 'session settings are set by the service',
  replication: 'the service opens replication connections itself',
  application_name: 'the service names its own sessions',
  fallback_application_name: 'the service names its own sessions',
  client_encoding: 'the service always uses UTF8',
  ssl: 'use sslmode',
  uselibpqcompat: 'use sslmode',
};

function refuseControl(value: string, what: string, allowAllButNul = false): void {
  if (hasControl(value, allowAllButNul)) throw invalidDsn(`the ${what} contains a control character`);
}

/**
 * Checks a PostgreSQL DSN against the allow-list without touching the file system: URL form,
 * scheme, host (a Unix socket only where the operator allows it), port, user, database, and the
 * query parameters in ALLOWED. Paths in sslrootcert, sslcert and sslkey are accepted only inside
 * the operator's TLS directory, and only checked lexically here; they are read at connect time.
 * Every refusal is a 422 INVALID_DSN naming the part, never echoing a value.
 */
export function parsePostgresDsn(dsn: string, policy: LocalAccessPolicy): PostgresDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  const { url, hostless } = parseUrl(dsn);
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw invalidDsn('scheme must be postgres:// or postgresql://');
  }
  if (url.hash !== '') throw invalidDsn('must not have a #fragment');

  const params = queryParams(url.search);

  let socketDir: string | undefined;
  const hostParam = params.get('host');
  if (hostParam !== undefined && hostless && hostParam.startsWith('/')) {
    socketDir = hostParam;
    params.delete('host');
  }
  refuseUnlistedParams(params.keys(), ALLOWED, UNSUPPORTED);

  let host = hostless ? '' : decode(url.hostname, 'host');
  if (/^%2f/i.test(url.hostname)) socketDir = host;
  if (socketDir !== undefined) {
    if (!policy.allowUnixSockets) {
      throw invalidDsn(
        'names a Unix socket on the service machine; sockets are refused unless the operator sets connections.allow_unix_sockets',
      );
    }
    if (!isAbsolute(socketDir) || socketDir.includes('\u0000')) {
      throw invalidDsn('the socket directory must be an absolute path');
    }
    host = socketDir;
  } else {
    if (host === '') throw invalidDsn('must name a host');
    host = host.replace(/^\[(.*)\]$/, '$1');
  }
  refuseControl(host, 'host');

  const port = url.port === '' ? 5432 : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalidDsn('port must be 1 to 65535');

  const database = decode(url.pathname.replace(/^\//, ''), 'database');
  if (database === '' || database.includes('/')) {
    throw invalidDsn('must name one database in its path, e.g. postgres://user@host:5432/mydb');
  }
  refuseControl(database, 'database');
  const user = decode(url.username, 'user');
  if (user === '') throw invalidDsn('must name a user, e.g. postgres://user@host:5432/mydb');
  refuseControl(user, 'user');

  const inQuery = params.get('password');
  if (inQuery !== undefined && url.password !== '') {
    throw invalidDsn('has a password both in the user part and in the query');
  }
  const password = inQuery ?? (url.password === '' ? undefined : decode(url.password, 'password'));
  if (password !== undefined) refuseControl(password, 'password', true);

  const sslmode = sslModeOf(params.get('sslmode'));
  const sslrootcert = params.get('sslrootcert');
  if (sslrootcert === 'system' && sslmode !== undefined && sslmode !== 'verify-full') {
    throw invalidDsn(`sslrootcert=system needs sslmode=verify-full (got ${sslmode})`);
  }
  for (const key of ['sslrootcert', 'sslcert', 'sslkey'] as const) {
    const value = params.get(key);
    if (value === undefined || (key === 'sslrootcert' && value === 'system')) continue;
    checkTlsFileName(key, value, policy);
  }

  url.password = '';
  url.search = url.search
    .replace(/^\?/, '')
    .split('&')
    .filter((pair) => !/^(password|sslpassword)(=|$)/.test(pair))
    .join('&');
  return {
    host,
    socket: socketDir !== undefined,
    port,
    database,
    user,
    sslmode: sslrootcert === 'system' ? 'verify-full' : sslmode,
    sslrootcert,
    sslcert: params.get('sslcert'),
    sslkey: params.get('sslkey'),
    password,
    sslpassword: params.get('sslpassword'),
    publicDsn: hostless ? url.toString().replace(`@${NO_HOST}/`, '@/') : url.toString(),
  };
}

/**
 * What a stored secret is bound to: host, port, database and user of a DSN. Read leniently, as a
 * row stored by an older version may no longer pass the allow-list; one that cannot be read at
 * all matches no other DSN.
 */
export function endpointOf(dsn: string): string {
  try {
    const { url, hostless } = parseUrl(dsn);
    const host = hostless ? `socket:${url.searchParams.get('host') ?? ''}` : url.hostname.toLowerCase();
    return JSON.stringify([host, url.port || '5432', url.pathname, url.username]);
  } catch {
    return `\u0000${dsn}`;
  }
}

// `postgres://user@/db?host=/dir` (libpq's form for a socket) is not a valid URL: parse it with a stand-in host.
const NO_HOST = 'no-host.invalid';

function parseUrl(dsn: string): { url: URL; hostless: boolean } {
  try {
    const url = new URL(dsn);
    return { url, hostless: url.hostname === '' };
  } catch {
    if (/^postgres(ql)?:\/\/[^/?#]*@\//.test(dsn)) {
      try {
        return { url: new URL(dsn.replace('@/', `@${NO_HOST}/`)), hostless: true };
      } catch {}
    }
    throw invalidDsn('must be a URL such as postgres://user:password@host:5432/database');
  }
}

// Percent-decoding only, as libpq does: a '+' in a password stays a '+'.
function queryParams(search: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const pair of search.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const key = decode(at < 0 ? pair : pair.slice(0, at), 'parameter name');
    const value = decode(at < 0 ? '' : pair.slice(at + 1), `value of '${shown(key)}'`);
    if (params.has(key)) throw invalidDsn(`parameter '${shown(key)}' is given twice`);
    refuseControl(key, 'parameter names');
    refuseControl(value, `value of '${shown(key)}'`, key === 'password' || key === 'sslpassword');
    params.set(key, value);
  }
  return params;
}

function sslModeOf(value: string | undefined): SslMode | undefined {
  if (value === undefined) return undefined;
  if ((SSL_MODES as readonly string[]).includes(value)) return value as SslMode;
  if (value === 'prefer' || value === 'allow') {
    throw invalidDsn(
      `sslmode=${value} silently falls back to an unencrypted connection; use require, verify-ca or verify-full (or disable)`,
    );
  }
  throw invalidDsn(`sslmode must be one of ${SSL_MODES.join(', ')}`);
}

function checkTlsFileName(key: string, value: string, policy: LocalAccessPolicy): void {
  if (policy.tlsFileDir === undefined) {
    const field =
      key === 'sslrootcert' ? 'tls.ca_cert' : key === 'sslcert' ? 'tls.client_cert' : 'tls.client_key';
    throw invalidDsn(
      `parameter '${key}' names a file on the service machine; give the PEM text in ${field} instead` +
        (key === 'sslrootcert' ? ' (or sslrootcert=system for the trusted public CAs)' : ''),
    );
  }
  const within = relative(policy.tlsFileDir, resolve(policy.tlsFileDir, value));
  if (within === '' || within.startsWith('..') || isAbsolute(within)) {
    throw invalidDsn(`parameter '${key}' must name a file inside connections.tls_file_dir`);
  }
}
