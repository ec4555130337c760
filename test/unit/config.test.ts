import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/config/duration.js';
import { loadConfig, parseCommandLine } from '../../src/config/load.js';
import { ConfigError } from '../../src/config/options.js';

const load = (argv: string[], env: NodeJS.ProcessEnv = {}) => loadConfig(parseCommandLine(argv), env);

function yamlFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('configuration', () => {
  it('has working defaults', () => {
    const config = load([]);
    expect(config).toEqual({
      listen: { host: '127.0.0.1', port: 7600 },
      dataDir: './data',
      spoolDir: resolve('./data/spool'),
      databaseUrl: undefined,
      auth: {
        mode: 'none',
        sessionTtlMs: 12 * 3_600_000,
        masterKeyFile: undefined,
        sessionMaxLifetimeMs: 7 * 24 * 3_600_000,
        cookieSecure: 'auto',
        metricsTokenFile: undefined,
        publicUrl: undefined,
        loginAttemptsPerMinute: 10,
        maxTokensPerUser: 50,
      },
      http: {
        allowedHosts: [],
        maxConnections: 'auto',
        maxConnectionsPerAddress: 128,
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 30_000,
        liveSocketsPerUser: 20,
        liveSocketsPerAddress: 20,
      },
      log: { level: 'info', format: 'auto' },
      slotWalWarningBytes: 10 * 1024 ** 3,
      sharedStreamHoldWalBytes: 1024 ** 3,
      sharedStreamCopyRowsPerSecond: 50_000,
      sourceStatusIntervalMs: 10_000,
      leaseTtlMs: 15_000,
      connections: {
        allowUnixSockets: false,
        tlsFileDir: undefined,
        dataDir: resolve('./data'),
        duckdbDirs: [],
        webhookAllowPrivate: false,
      },
    });
  });

  it('reports the position to the source every source_status_interval, of at least a second', () => {
    expect(load(['--source-status-interval', '2s']).sourceStatusIntervalMs).toBe(2_000);
    expect(() => load(['--source-status-interval', '500ms'])).toThrow(
      /source_status_interval: must be a duration of at least 1s such as 10s \(got "500ms"\)/,
    );
  });

  it('paces a copy beside a shared stream at shared_stream_copy_rate rows a second, 0 for no limit', () => {
    expect(load(['--shared-stream-copy-rate', '0']).sharedStreamCopyRowsPerSecond).toBe(0);
    expect(load([], { REPLICATOR_SHARED_STREAM_COPY_RATE: '200000' }).sharedStreamCopyRowsPerSecond).toBe(
      200_000,
    );
    for (const bad of ['-1', 'fast', '1e5', '']) {
      expect(() => load([`--shared-stream-copy-rate=${bad}`])).toThrow(
        /shared_stream_copy_rate: must be a whole number of rows per second, 0 for no limit/,
      );
    }
  });

  it('spools large transactions under the data directory unless spool_dir says where', () => {
    expect(load(['--data-dir', '/srv/replicator']).spoolDir).toBe('/srv/replicator/spool');
    expect(load(['--spool-dir', '/scratch/spool']).spoolDir).toBe('/scratch/spool');
    expect(load([], { REPLICATOR_SPOOL_DIR: 'relative/spool' }).spoolDir).toBe(resolve('relative/spool'));
    expect(load(['--config', yamlFile('spool_dir: /mnt/fast\n')]).spoolDir).toBe('/mnt/fast');
  });

  it('reads the directories DuckDB files may live in, and refuses relative ones', () => {
    expect(
      load(['--connections-duckdb-dirs', '/srv/duck, /var/lib/warehouse']).connections.duckdbDirs,
    ).toEqual(['/srv/duck', '/var/lib/warehouse']);
    expect(() => load(['--connections-duckdb-dirs', '/srv/duck,relative'])).toThrow(
      'config error: connections.duckdb_dirs: must list absolute paths (got "relative")',
    );
  });

  it('reads the HTTP limits and allowed hosts, and refuses bad values naming the key', () => {
    const config = load(
      ['--http-allowed-hosts', 'Replicator.Example.com, ops.internal', '--http-max-connections', '500'],
      { REPLICATOR_HTTP_HEADERS_TIMEOUT: '5s', REPLICATOR_HTTP_LIVE_SOCKETS_PER_USER: '4' },
    );
    expect(config.http).toMatchObject({
      allowedHosts: ['replicator.example.com', 'ops.internal'],
      maxConnections: 500,
      headersTimeoutMs: 5_000,
      liveSocketsPerUser: 4,
    });
    expect(load(['--auth-max-tokens-per-user', '7']).auth.maxTokensPerUser).toBe(7);
    expect(() => load(['--http-allowed-hosts', 'https://x.example'])).toThrow(
      'config error: http.allowed_hosts: must list host names without port or scheme (got "https://x.example")',
    );
    expect(() => load(['--http-max-connections', '0'])).toThrow('config error: http.max_connections:');
    expect(() => load(['--http-request-timeout', '5s', '--http-headers-timeout', '10s'])).toThrow(
      'config error: http.request_timeout: must be at least http.headers_timeout',
    );
  });

  it('lets webhooks reach private addresses only when told to', () => {
    expect(
      load([], { REPLICATOR_CONNECTIONS_WEBHOOK_ALLOW_PRIVATE: 'true' }).connections.webhookAllowPrivate,
    ).toBe(true);
    expect(() => load(['--connections-webhook-allow-private', 'yes'])).toThrow(ConfigError);
  });

  it('reads the authentication keys and refuses bad values naming the key', () => {
    const config = load([
      '--auth-session-max-lifetime',
      '2d',
      '--auth-cookie-secure',
      'true',
      '--auth-public-url',
      'https://replicator.example.com/',
    ]);
    expect(config.auth).toMatchObject({
      sessionMaxLifetimeMs: 2 * 24 * 3_600_000,
      cookieSecure: 'always',
      publicUrl: 'https://replicator.example.com',
    });
    expect(() => load(['--auth-session-max-lifetime', '1h'])).toThrow(
      'auth.session_max_lifetime: must be a duration at least auth.session_ttl',
    );
    expect(() => load(['--auth-cookie-secure', 'yes'])).toThrow(
      'auth.cookie_secure: must be one of auto, true, false',
    );
    expect(() => load(['--auth-public-url', 'https://x.example/path'])).toThrow(
      'auth.public_url: must be a scheme and host',
    );
  });

  it('keeps local access off unless the operator turns it on', () => {
    const config = load([
      '--connections-allow-unix-sockets',
      'true',
      '--connections-tls-file-dir',
      '/etc/replicator/tls',
    ]);
    expect(config.connections).toMatchObject({ allowUnixSockets: true, tlsFileDir: '/etc/replicator/tls' });
    expect(() => load(['--connections-tls-file-dir', 'relative/dir'])).toThrow(
      'connections.tls_file_dir: must be an absolute path',
    );
    expect(() => load(['--connections-allow-unix-sockets', 'yes'])).toThrow(
      'connections.allow_unix_sockets: must be one of true, false',
    );
  });

  it('takes flags over environment over file over defaults', () => {
    const file = yamlFile(
      'listen: 0.0.0.0:8000\nlog:\n  level: warn\nauth:\n  mode: none\n  session_ttl: 2h\n',
    );
    expect(load(['--config', file]).listen).toEqual({ host: '0.0.0.0', port: 8000 });
    expect(load(['--config', file]).log.level).toBe('warn');
    expect(load(['--config', file], { REPLICATOR_LOG_LEVEL: 'debug' }).log.level).toBe('debug');
    expect(
      load(['--config', file, '--log-level', 'error'], { REPLICATOR_LOG_LEVEL: 'debug' }).log.level,
    ).toBe('error');
    expect(load(['--config', file, '--port', '9000']).listen).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(load([], { REPLICATOR_CONFIG: file }).auth.sessionTtlMs).toBe(7_200_000);
  });

  it('parses listen forms', () => {
    expect(load(['--listen', '7700']).listen).toEqual({ host: '127.0.0.1', port: 7700 });
    expect(load(['--listen', ':7700']).listen).toEqual({ host: '127.0.0.1', port: 7700 });
    expect(load(['--listen', '[::1]:7700']).listen).toEqual({ host: '::1', port: 7700 });
  });

  it('takes the subcommand and passes serve by default', () => {
    expect(parseCommandLine([]).command).toBe('serve');
    expect(parseCommandLine(['migrate', '--database-url', 'postgres://h/db']).command).toBe('migrate');
    expect(parseCommandLine(['--help']).command).toBe('help');
  });

  it.each([
    [['--listen', 'nope'], 'listen: must be "host:port" or "port"'],
    [['--port', '0'], 'port: must be a port number'],
    [['--auth-mode', 'on'], 'auth.mode: must be one of none, enabled'],
    [['--auth-session-ttl', '12'], 'auth.session_ttl: must be a duration'],
    [['--database-url', 'mysql://x'], 'database_url: must be a postgres://'],
    [['--data-dir', ' '], 'data_dir: must not be empty'],
    [['--slot-wal-warning', 'lots'], 'slot_wal_warning: must be a size'],
    [['--config', '/nonexistent/file.yaml'], 'config: cannot read /nonexistent/file.yaml: ENOENT'],
  ])('refuses %j naming the key', (argv, message) => {
    expect(() => load(argv)).toThrow(ConfigError);
    expect(() => load(argv)).toThrow(message);
  });

  it('refuses unknown keys, lists and non-mappings in the file', () => {
    expect(() => load(['--config', yamlFile('lissen: 1')])).toThrow('lissen: unknown key in the config file');
    expect(() => load(['--config', yamlFile('listen: [1, 2]')])).toThrow('listen: must be a single value');
    expect(() => load(['--config', yamlFile('- a')])).toThrow('must hold a mapping');
    expect(() => load(['--config', yamlFile('a: [')])).toThrow('is not valid YAML');
  });

  it('parses sizes', () => {
    expect(load(['--slot-wal-warning', '500MB']).slotWalWarningBytes).toBe(500_000_000);
    expect(load(['--slot-wal-warning', '2GiB']).slotWalWarningBytes).toBe(2 * 1024 ** 3);
    expect(load(['--slot-wal-warning', '1048576']).slotWalWarningBytes).toBe(1048576);
  });

  it('validates both auth modes', () => {
    expect(load(['--auth-mode', 'enabled']).auth.mode).toBe('enabled');
  });
});

describe('durations', () => {
  it.each([
    ['12h', 43_200_000],
    ['90m', 5_400_000],
    ['1h30m', 5_400_000],
    ['45s', 45_000],
    ['2d', 172_800_000],
    ['250ms', 250],
  ])('%s is %i ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '12', 'h', '1.5h', '-1h', '0h', '1 h'])('refuses %j', (text) =>
    expect(parseDuration(text)).toBeUndefined(),
  );
});
