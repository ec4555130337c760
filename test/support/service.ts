import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from '../../src/config/options.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { createLogger } from '../../src/log/logger.js';
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
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export async function startTestService(config: Config): Promise<TestService> {
  const running = await startService(config, createLogger(config.log.level));
  return {
    url: running.url,
    running,
    request: (method, path, body) => jsonRequest(running.url, method, path, body),
    stop: () => running.stop(),
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
