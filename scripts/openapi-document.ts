import { ApplyService } from '../src/apply/apply-service.js';
import { AuditFile } from '../src/audit/audit-file.js';
import { AuditLog } from '../src/audit/audit-log.js';
import { AccountService } from '../src/auth/account-service.js';
import { Authenticator } from '../src/auth/authenticator.js';
import { SecretHasher } from '../src/auth/secret-token.js';
import { SessionService } from '../src/auth/session-service.js';
import { Sessions } from '../src/auth/sessions.js';
import { createSso } from '../src/auth/sso/index.js';
import { TokenService } from '../src/auth/token-service.js';
import { buildConfig } from '../src/config/options.js';
import { ConnectionsService } from '../src/connections/connections-service.js';
import { WorkersService } from '../src/fleet/workers-service.js';
import { HealthService } from '../src/health/health-service.js';
import { buildApp } from '../src/http/app.js';
import { LiveHub } from '../src/live/live-hub.js';
import { createLogger } from '../src/log/logger.js';
import { createServiceMetrics } from '../src/metrics/metrics-registry.js';
import { PipelineStatusService } from '../src/pipelines/pipeline-status-service.js';
import { PipelinesService } from '../src/pipelines/pipelines-service.js';
import { ConnectionTester } from '../src/runtime/connection-test.js';
import { OrphanedSlots } from '../src/runtime/orphaned-slots.js';
import { PipelineEndpoints } from '../src/runtime/pipeline-endpoints.js';
import { ReplicationRunner } from '../src/runtime/replication-runner.js';
import { SchemaDecisions } from '../src/runtime/schema-decisions.js';
import { SourceTables } from '../src/runtime/source-tables.js';
import { Supervisor } from '../src/runtime/supervisor.js';
import { SecretBox } from '../src/secrets/secret-box.js';
import { connectionTypeCatalog } from '../src/sinks/registry.js';
import type { DatabasePool } from '../src/store/pool.js';
import { createTenancyServices } from '../src/tenancy/tenancy-services.js';
import { VerificationService } from '../src/verify/verification-service.js';

/**
 * A metadata store that refuses any use. Slonik's `createPool` connects at once (to look up type
 * parsers), so a real pool cannot be made without a database; the services only keep the pool
 * until a request needs it, and building the app and its document makes no request.
 */
const NO_DATABASE = new Proxy({} as DatabasePool, {
  get(_target, property) {
    // Not a promise: `await` and inspection look these up.
    if (typeof property === 'symbol' || property === 'then') return undefined;
    // The health service's background refresh asks every few seconds, and stops on a pool that
    // ended: a document that takes longer to build (a busy machine) must not fail for it.
    if (property === 'state') return () => ({ state: 'ENDED' });
    throw new Error(`the OpenAPI document needs no database (pool.${property} was used)`);
  },
});

/**
 * The service's OpenAPI document, without a database: the app is built as `startService` builds it
 * (authentication enabled and a public URL set, so the SSO routes are in), with the real services on
 * a pool that is never used. Nothing is started (no supervisor, worker or listener).
 */
export async function openapiDocument(): Promise<Record<string, unknown>> {
  const config = buildConfig(
    new Map([
      ['auth.mode', 'enabled'],
      ['auth.public_url', 'http://localhost:8080'],
      ['log.level', 'silent'],
    ]),
  );
  const logger = createLogger('silent');
  const pool = NO_DATABASE;
  const key = Buffer.alloc(32);
  const secrets = new SecretBox(key);
  const hasher = new SecretHasher(key);
  const resolveConnection = (projectId: string, name: string) =>
    connections.resolve({ projectId, actor: 'system' }, name);
  const connections = new ConnectionsService(pool, secrets, connectionTypeCatalog, config.connections);
  const pipelines = new PipelinesService(pool);
  const runner = new ReplicationRunner({
    pool,
    warnRetainedWalBytes: config.slotWalWarningBytes,
    logger,
    resolveConnection,
  });
  const live = new LiveHub();
  const supervisor = new Supervisor({ pool, runner, logger, hub: live });
  const sessions = new Sessions(pool, hasher, {
    ttlMs: config.auth.sessionTtlMs,
    maxLifetimeMs: config.auth.sessionMaxLifetimeMs,
    secureCookie: config.auth.cookieSecure,
  });
  const audit = new AuditLog(pool, new AuditFile('/dev/null'), logger);
  const app = await buildApp({
    logger,
    services: {
      connections,
      sourceTables: new SourceTables(new PipelineEndpoints({ pool, resolveConnection }), resolveConnection),
      connectionTester: new ConnectionTester(connections),
      verifications: new VerificationService(
        pool,
        () => undefined,
        () => {},
      ),
      orphanedSlots: new OrphanedSlots(
        pool,
        new PipelineEndpoints({ pool, resolveConnection }),
        resolveConnection,
      ),
      pipelines,
      apply: new ApplyService(connections, pipelines),
      status: new PipelineStatusService(pool, supervisor),
      health: new HealthService(pool, config.leaseTtlMs),
      live,
      schemaDecisions: new SchemaDecisions(pool, runner, supervisor, live),
      metrics: createServiceMetrics(() => supervisor.running()),
      workers: new WorkersService(pool, config.leaseTtlMs),
      pool,
      accounts: new AccountService(pool),
      tokens: new TokenService(pool, hasher, config.auth.maxTokensPerUser),
      audit,
      sessions,
      sessionAdmin: new SessionService(pool),
      sso: createSso({
        pool,
        secrets,
        hasher,
        sessions,
        audit,
        publicUrl: config.auth.publicUrl ?? 'http://localhost:8080',
        logger,
      }),
      tenancy: createTenancyServices(pool, sessions),
    },
    auth: {
      mode: 'enabled',
      authenticator: new Authenticator(pool, hasher, sessions),
      metricsToken: undefined,
      trustedOrigins: [],
      loginAttemptsPerMinute: config.auth.loginAttemptsPerMinute,
    },
    http: { ...config.http, listenHost: config.listen.host },
  });
  try {
    await app.ready();
    return structuredClone(app.swagger()) as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
