import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import type { Config } from '../../src/config/options.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { createLogger, LOG_REDACTION, type Logger } from '../../src/log/logger.js';
import { type RunningService, startService } from '../../src/server.js';

/** A service started in this process on a random port, with a small JSON client. */
export interface TestService {
  url: string;
  running: RunningService;
  request<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

export function testConfig(databaseUrl: string | undefined, dataDir?: string): Config {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'replicator-data-'));
  return {
    listen: { host: '127.0.0.1', port: 0 },
    dataDir: dir,
    spoolDir: join(resolve(dir), 'spool'),
    databaseUrl,
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
      // Tests make many calls at once from one address.
      maxConnectionsPerAddress: 1_000,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      liveSocketsPerUser: 20,
      liveSocketsPerAddress: 20,
    },
    log: {
      level: (process.env.TEST_LOG_LEVEL as Config['log']['level'] | undefined) ?? 'silent',
      format: 'json',
    },
    slotWalWarningBytes: 10 * 1024 ** 3,
    sharedStreamHoldWalBytes: 1024 ** 3,
    sharedStreamCopyRowsPerSecond: 50_000,
    sourceStatusIntervalMs: 10_000,
    leaseTtlMs: 3_000,
    connections: { ...NO_LOCAL_ACCESS, dataDir: resolve(dir) },
  };
}

/** Sends one request; a string body is sent as-is (to test malformed JSON), anything else as JSON. */
export async function jsonRequest(base: string, method: string, path: string, body?: unknown) {
  const init: RequestInit = { method };
  // As the CLI and the dashboard do: every state-changing call declares JSON, bodiless ones too.
  if (body !== undefined || !['GET', 'HEAD'].includes(method))
    init.headers = { 'content-type': 'application/json' };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  // /metrics and the like answer text: only a JSON answer is parsed.
  const json = (res.headers.get('content-type') ?? '').includes('json');
  return { status: res.status, body: text ? (json ? JSON.parse(text) : text) : undefined };
}

/** A stop slower than this prints the service's last warnings: what it was waiting on. */
const SLOW_TEST_STOP_MS = 30_000;

/**
 * A quiet service's warnings, kept in memory (the last 200) rather than written: printed only when
 * its stop is slow, so a stop that hangs under load says where (see slow-stop.ts).
 */
function keptWarnings(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'warn', redact: LOG_REDACTION },
    {
      write(line: string) {
        lines.push(line.trimEnd());
        if (lines.length > 200) lines.shift();
      },
    },
  );
  return { logger, lines };
}

export async function startTestService(config: Config): Promise<TestService> {
  const kept = config.log.level === 'silent' ? keptWarnings() : undefined;
  const running = await startService(config, kept?.logger ?? createLogger(config.log.level));
  return {
    url: running.url,
    running,
    request: (method, path, body) => jsonRequest(running.url, method, path, body),
    stop: async () => {
      const slow = setTimeout(() => {
        process.stderr.write(
          `the test service at ${running.url} has not stopped in ${SLOW_TEST_STOP_MS / 1000} s; its last warnings:\n${kept?.lines.join('\n') ?? '(logged as configured)'}\n`,
        );
      }, SLOW_TEST_STOP_MS);
      try {
        await running.stop();
      } finally {
        clearTimeout(slow);
      }
    },
  };
}

/** Creates pipeline `name` from the source connection `src`'s public.items into `connection`, and starts it. */
export async function startItemsPipeline(
  service: TestService,
  name: string,
  connection: string,
  properties: Record<string, string>,
): Promise<void> {
  const created = await service.request('POST', '/v1/pipelines', {
    name,
    source: { connection: 'src', tables: ['public.items'] },
    sink: { connection, properties },
  });
  if (created.status !== 201)
    throw new Error(`creating ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  const started = await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
  if (started.status !== 200)
    throw new Error(`starting ${name}: ${started.status} ${JSON.stringify(started.body)}`);
}
