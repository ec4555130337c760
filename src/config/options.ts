import { isAbsolute, join, resolve } from 'node:path';
import type { LocalAccessPolicy } from '../connections/local-access.js';
import { parseBytes, parseDuration } from './duration.js';

/** The service configuration after loading and validation. */
export interface Config {
  /** Address the HTTP server binds to. */
  listen: { host: string; port: number };
  /** Folder for the embedded PostgreSQL, the generated master key and other local state. */
  dataDir: string;
  /** Absolute folder where large transactions are spooled while they arrive: `<dataDir>/spool` unless set. */
  spoolDir: string;
  /** Metadata store; when absent an embedded PostgreSQL is started inside dataDir. */
  databaseUrl: string | undefined;
  auth: {
    mode: 'none' | 'enabled';
    /** Sliding session lifetime in milliseconds. */
    sessionTtlMs: number;
    /**
     * File holding the 32-byte master key as 64 hex characters. Unset: `<dataDir>/master.key`,
     * generated there on a first start with authentication off (never with it on).
     */
    masterKeyFile: string | undefined;
    /** Absolute cap on a session's life, however active. */
    sessionMaxLifetimeMs: number;
    /** Whether the session cookie is marked Secure: `auto` when the request came over https. */
    cookieSecure: 'auto' | 'always' | 'never';
    /** File holding the bearer secret a Prometheus scraper sends to `/metrics` while authentication is on. */
    metricsTokenFile: string | undefined;
    /** Sign-in and bootstrap attempts allowed per client address and minute, per instance. */
    loginAttemptsPerMinute: number;
    /**
     * Lets SSO providers live at plain-http loopback addresses. Only for tests, which run their own
     * providers on 127.0.0.1: never read from a file, flag or environment.
     */
    ssoAllowInsecureIssuers?: boolean;
    /** The address users reach the service at (`https://replicator.example.com`): SSO callbacks and the trusted origin. */
    publicUrl: string | undefined;
    /** Active (not revoked, not expired) API tokens one user may hold at once. */
    maxTokensPerUser: number;
  };
  /** Limits and checks of the HTTP server (see http/connection-limits.ts and http/request-origin.ts). */
  http: HttpSettings;
  log: { level: LogLevel; format: LogFormat };
  /** Retained WAL of a pipeline's slot above which the pipeline shows a warning. */
  slotWalWarningBytes: number;
  /** WAL a pipeline of a shared stream that does not read it may hold (shared_stream_hold_wal). */
  sharedStreamHoldWalBytes: number;
  /** Rows per second a copy goes while others read its shared stream (shared_stream_copy_rate); 0: no limit. */
  sharedStreamCopyRowsPerSecond: number;
  /** How long a worker's leases last without a heartbeat: the bound on a dead worker's pipelines waiting. */
  leaseTtlMs: number;
  /** How often a replication connection reports its position when nothing else does. */
  sourceStatusIntervalMs: number;
  /** What connections may reach on this machine: Unix sockets, TLS files. Nothing by default. */
  connections: LocalAccessPolicy;
  /**
   * The longest wait between two attempts of a failing pipeline; 60 s when unset. Only for tests,
   * which must see many attempts in little time: never read from a file, flag or environment.
   */
  retryMaxDelayMs?: number;
}

export interface HttpSettings {
  /** Host names besides the listen address, loopback names and `auth.public_url` that requests may name in `Host`. */
  allowedHosts: readonly string[];
  /** Open connections in all; `auto`: half the process's open-file limit, the rest kept for the data plane. */
  maxConnections: number | 'auto';
  /** Open connections from one client address. */
  maxConnectionsPerAddress: number;
  /** Time a client has to send a request's headers. */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included. */
  requestTimeoutMs: number;
  /** Open `/v1/live` sockets per signed-in user, and per client address. */
  liveSocketsPerUser: number;
  liveSocketsPerAddress: number;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Thrown for any bad configuration value; the message is the one line printed before exiting. */
export class ConfigError extends Error {
  constructor(key: string, problem: string) {
    super(`config error: ${key}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** One configurable key: where it comes from and how its text becomes a value. */
export interface OptionSpec {
  /** Dotted key as in the YAML file, e.g. `auth.mode`. */
  key: string;
  /** Command-line flag without the dashes. */
  flag: string;
  description: string;
  default?: string;
}

/**
 * Every key, once. Environment variables are derived: `REPLICATOR_` + key in upper case with
 * dots as underscores (e.g. `REPLICATOR_AUTH_MODE`).
 */
export const OPTIONS: readonly OptionSpec[] = [
  {
    key: 'listen',
    flag: 'listen',
    default: '127.0.0.1:7600',
    description: 'host:port to bind the HTTP API to',
  },
  { key: 'port', flag: 'port', description: 'port to bind, overriding the port of `listen`' },
  { key: 'data_dir', flag: 'data-dir', default: './data', description: 'folder for local state' },
  {
    key: 'spool_dir',
    flag: 'spool-dir',
    description: 'folder for large transactions spooled to disk while they arrive (default <data_dir>/spool)',
  },
  { key: 'database_url', flag: 'database-url', description: 'metadata PostgreSQL URL (embedded when unset)' },
  { key: 'auth.mode', flag: 'auth-mode', default: 'none', description: '`none` or `enabled`' },
  {
    key: 'auth.session_ttl',
    flag: 'auth-session-ttl',
    default: '12h',
    description: 'sliding session lifetime',
  },
  {
    key: 'auth.master_key_file',
    flag: 'auth-master-key-file',
    description: 'file with the 64-hex-char master key (default <data_dir>/master.key)',
  },
  {
    key: 'auth.session_max_lifetime',
    flag: 'auth-session-max-lifetime',
    default: '7d',
    description: 'absolute cap on a session, however active',
  },
  {
    key: 'auth.cookie_secure',
    flag: 'auth-cookie-secure',
    default: 'auto',
    description: 'Secure attribute of the session cookie: auto (when served over https), true or false',
  },
  {
    key: 'auth.metrics_token_file',
    flag: 'auth-metrics-token-file',
    description: 'file with the bearer secret that opens /metrics to a scraper when auth is enabled',
  },
  {
    key: 'auth.login_attempts_per_minute',
    flag: 'auth-login-attempts-per-minute',
    default: '10',
    description: 'sign-in and bootstrap attempts per client address and minute',
  },
  {
    key: 'auth.public_url',
    flag: 'auth-public-url',
    description: 'URL users reach the service at (SSO callbacks, trusted origin)',
  },
  {
    key: 'auth.max_tokens_per_user',
    flag: 'auth-max-tokens-per-user',
    default: '50',
    description: 'active API tokens one user may hold',
  },
  {
    key: 'http.allowed_hosts',
    flag: 'http-allowed-hosts',
    description:
      'comma-separated host names requests may name in Host, besides the listen address and loopback',
  },
  {
    key: 'http.max_connections',
    flag: 'http-max-connections',
    default: 'auto',
    description: 'open HTTP connections in all (auto: half the open-file limit)',
  },
  {
    key: 'http.max_connections_per_address',
    flag: 'http-max-connections-per-address',
    default: '128',
    description: 'open HTTP connections from one client address',
  },
  {
    key: 'http.headers_timeout',
    flag: 'http-headers-timeout',
    default: '10s',
    description: "time a client has to send a request's headers",
  },
  {
    key: 'http.request_timeout',
    flag: 'http-request-timeout',
    default: '30s',
    description: 'time a client has to send a whole request, body included',
  },
  {
    key: 'http.live_sockets_per_user',
    flag: 'http-live-sockets-per-user',
    default: '20',
    description: 'open /v1/live WebSockets per signed-in user',
  },
  {
    key: 'http.live_sockets_per_address',
    flag: 'http-live-sockets-per-address',
    default: '20',
    description: 'open /v1/live WebSockets per client address',
  },
  { key: 'log.level', flag: 'log-level', default: 'info', description: LOG_LEVELS.join(', ') },
  {
    key: 'log.format',
    flag: 'log-format',
    default: 'auto',
    description:
      'json (a JSON object a line), pretty (coloured lines for a person), or auto: pretty on a terminal, else json',
  },
  {
    key: 'fleet.lease_ttl',
    flag: 'lease-ttl',
    default: '15s',
    description: "how long a dead worker's pipelines wait before another worker takes them",
  },
  {
    key: 'source_status_interval',
    flag: 'source-status-interval',
    default: '10s',
    description:
      'how often a replication connection reports its position to the source when nothing else does (a position applied is reported at once)',
  },
  {
    key: 'slot_wal_warning',
    flag: 'slot-wal-warning',
    default: '10GiB',
    description: "retained WAL of a pipeline's slot that raises a warning",
  },
  {
    key: 'shared_stream_hold_wal',
    flag: 'shared-stream-hold-wal',
    default: '1GiB',
    description:
      'WAL a paused, stopped or failed pipeline of a shared source stream may hold at the source; past it the stream lets the pipeline go, and its next start copies its tables again',
  },
  {
    key: 'shared_stream_copy_rate',
    flag: 'shared-stream-copy-rate',
    default: '50000',
    description:
      'rows per second a pipeline copies while other pipelines read its shared source stream, so that its copy does not make their changes late (0: as fast as it goes)',
  },
  {
    key: 'connections.allow_unix_sockets',
    flag: 'connections-allow-unix-sockets',
    default: 'false',
    description: 'whether DSNs may name a Unix socket directory of this machine as host',
  },
  {
    key: 'connections.tls_file_dir',
    flag: 'connections-tls-file-dir',
    description: 'absolute directory whose files DSNs may name in sslrootcert, sslcert and sslkey',
  },
  {
    key: 'connections.duckdb_dirs',
    flag: 'connections-duckdb-dirs',
    description: 'comma-separated absolute directories where duckdb DSNs may name a database file',
  },
  {
    key: 'connections.webhook_allow_private',
    flag: 'connections-webhook-allow-private',
    default: 'false',
    description: 'whether webhooks may reach loopback, private and link-local addresses (and use http)',
  },
];

export const envName = (key: string) => `REPLICATOR_${key.toUpperCase().replaceAll('.', '_')}`;

function parsePort(key: string, text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) {
    throw new ConfigError(key, `must be a port number from 1 to 65535 (got "${text}")`);
  }
  return port;
}

function parseListen(text: string): Config['listen'] {
  const match = /^(?:(\[[^\]]+\]|[^:]*):)?(\d+)$/.exec(text.trim());
  if (!match) throw new ConfigError('listen', `must be "host:port" or "port" (got "${text}")`);
  const host = (match[1] ?? '').replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { host, port: parsePort('listen', match[2] as string) };
}

function oneOf<T extends string>(key: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new ConfigError(key, `must be one of ${allowed.join(', ')} (got "${text}")`);
  }
  return text as T;
}

function wholeNumber(key: string, text: string): number {
  const n = Number(text);
  if (!/^\d{1,7}$/.test(text) || n < 1) {
    throw new ConfigError(key, `must be a whole number from 1 (got "${text}")`);
  }
  return n;
}

function durationOf(key: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 1_000) {
    throw new ConfigError(key, `must be a duration of at least 1s such as 10s (got "${text}")`);
  }
  return ms;
}

function parseHttp(value: (key: string) => string | undefined): HttpSettings {
  const allowedHosts = (value('http.allowed_hosts') ?? '')
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== '');
  for (const host of allowedHosts) {
    if (!/^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/.test(host)) {
      throw new ConfigError(
        'http.allowed_hosts',
        `must list host names without port or scheme (got "${host}")`,
      );
    }
  }
  const maxText = value('http.max_connections') as string;
  const headersTimeoutMs = durationOf('http.headers_timeout', value('http.headers_timeout') as string);
  const requestTimeoutMs = durationOf('http.request_timeout', value('http.request_timeout') as string);
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new ConfigError('http.request_timeout', 'must be at least http.headers_timeout');
  }
  return {
    allowedHosts,
    maxConnections: maxText === 'auto' ? 'auto' : wholeNumber('http.max_connections', maxText),
    maxConnectionsPerAddress: wholeNumber(
      'http.max_connections_per_address',
      value('http.max_connections_per_address') as string,
    ),
    headersTimeoutMs,
    requestTimeoutMs,
    liveSocketsPerUser: wholeNumber(
      'http.live_sockets_per_user',
      value('http.live_sockets_per_user') as string,
    ),
    liveSocketsPerAddress: wholeNumber(
      'http.live_sockets_per_address',
      value('http.live_sockets_per_address') as string,
    ),
  };
}

/** Turns the merged raw values (already resolved by precedence) into a validated Config. */
export function buildConfig(raw: ReadonlyMap<string, string>): Config {
  const value = (key: string) => raw.get(key) ?? OPTIONS.find((o) => o.key === key)?.default;
  const listen = parseListen(value('listen') as string);
  const port = value('port');
  if (port !== undefined) listen.port = parsePort('port', port);

  const ttlText = value('auth.session_ttl') as string;
  const sessionTtlMs = parseDuration(ttlText);
  if (sessionTtlMs === undefined) {
    throw new ConfigError('auth.session_ttl', `must be a duration such as 12h or 90m (got "${ttlText}")`);
  }
  const maxText = value('auth.session_max_lifetime') as string;
  const sessionMaxLifetimeMs = parseDuration(maxText);
  if (sessionMaxLifetimeMs === undefined || sessionMaxLifetimeMs < sessionTtlMs) {
    throw new ConfigError(
      'auth.session_max_lifetime',
      `must be a duration at least auth.session_ttl, such as 7d (got "${maxText}")`,
    );
  }
  const attemptsText = value('auth.login_attempts_per_minute') as string;
  const loginAttemptsPerMinute = Number(attemptsText);
  if (!/^\d{1,6}$/.test(attemptsText) || loginAttemptsPerMinute < 1) {
    throw new ConfigError(
      'auth.login_attempts_per_minute',
      `must be a whole number from 1 (got "${attemptsText}")`,
    );
  }
  const publicUrl = value('auth.public_url') || undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^/?#\s]+\/?$/.test(publicUrl)) {
    throw new ConfigError(
      'auth.public_url',
      `must be a scheme and host such as https://replicator.example.com (got "${publicUrl}")`,
    );
  }
  const databaseUrl = value('database_url') || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('database_url', 'must be a postgres:// or postgresql:// URL');
  }
  const dataDir = value('data_dir') as string;
  if (dataDir.trim() === '') throw new ConfigError('data_dir', 'must not be empty');
  const spoolDir = value('spool_dir') || join(dataDir, 'spool');

  const walWarning = value('slot_wal_warning') as string;
  const slotWalWarningBytes = parseBytes(walWarning);
  if (slotWalWarningBytes === undefined) {
    throw new ConfigError('slot_wal_warning', `must be a size such as 10GiB or 500MB (got "${walWarning}")`);
  }
  const holdWal = value('shared_stream_hold_wal') as string;
  const sharedStreamHoldWalBytes = parseBytes(holdWal);
  if (sharedStreamHoldWalBytes === undefined) {
    throw new ConfigError(
      'shared_stream_hold_wal',
      `must be a size such as 1GiB or 500MB (got "${holdWal}")`,
    );
  }
  const copyRate = value('shared_stream_copy_rate') as string;
  if (!/^\d{1,9}$/.test(copyRate)) {
    throw new ConfigError(
      'shared_stream_copy_rate',
      `must be a whole number of rows per second, 0 for no limit (got "${copyRate}")`,
    );
  }
  const sharedStreamCopyRowsPerSecond = Number(copyRate);
  const sourceStatusIntervalMs = durationOf(
    'source_status_interval',
    value('source_status_interval') as string,
  );
  const leaseTtlMs = durationOf('fleet.lease_ttl', value('fleet.lease_ttl') as string);
  const tlsFileDir = value('connections.tls_file_dir') || undefined;
  if (tlsFileDir !== undefined && !isAbsolute(tlsFileDir)) {
    throw new ConfigError('connections.tls_file_dir', `must be an absolute path (got "${tlsFileDir}")`);
  }
  const duckdbDirs = (value('connections.duckdb_dirs') ?? '')
    .split(',')
    .map((dir) => dir.trim())
    .filter((dir) => dir !== '');
  for (const dir of duckdbDirs) {
    if (!isAbsolute(dir)) {
      throw new ConfigError('connections.duckdb_dirs', `must list absolute paths (got "${dir}")`);
    }
  }
  const webhookAllowPrivate = oneOf(
    'connections.webhook_allow_private',
    value('connections.webhook_allow_private') as string,
    ['true', 'false'] as const,
  );
  const sockets = oneOf(
    'connections.allow_unix_sockets',
    value('connections.allow_unix_sockets') as string,
    ['true', 'false'] as const,
  );
  return {
    listen,
    dataDir,
    spoolDir: resolve(spoolDir),
    connections: {
      allowUnixSockets: sockets === 'true',
      tlsFileDir,
      dataDir: resolve(dataDir),
      duckdbDirs: duckdbDirs.map((dir) => resolve(dir)),
      webhookAllowPrivate: webhookAllowPrivate === 'true',
    },
    slotWalWarningBytes,
    sharedStreamHoldWalBytes,
    sharedStreamCopyRowsPerSecond,
    sourceStatusIntervalMs,
    leaseTtlMs,
    databaseUrl,
    auth: {
      mode: oneOf('auth.mode', value('auth.mode') as string, ['none', 'enabled'] as const),
      sessionTtlMs,
      masterKeyFile: value('auth.master_key_file') || undefined,
      sessionMaxLifetimeMs,
      cookieSecure: { auto: 'auto', true: 'always', false: 'never' }[
        oneOf('auth.cookie_secure', value('auth.cookie_secure') as string, ['auto', 'true', 'false'] as const)
      ] as Config['auth']['cookieSecure'],
      metricsTokenFile: value('auth.metrics_token_file') || undefined,
      loginAttemptsPerMinute,
      publicUrl: publicUrl?.replace(/\/$/, ''),
      maxTokensPerUser: wholeNumber('auth.max_tokens_per_user', value('auth.max_tokens_per_user') as string),
    },
    http: parseHttp(value),
    log: {
      level: oneOf('log.level', value('log.level') as string, LOG_LEVELS),
      format: oneOf('log.format', value('log.format') as string, LOG_FORMATS),
    },
  };
}
