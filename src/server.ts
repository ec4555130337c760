import type { FastifyInstance } from 'fastify';
import { ApplyService } from './apply/apply-service.js';
import { AuditFile, auditFilePath } from './audit/audit-file.js';
import { AuditLog } from './audit/audit-log.js';
import { AccountService } from './auth/account-service.js';
import { Authenticator } from './auth/authenticator.js';
import { SecretHasher } from './auth/secret-token.js';
import { SessionService } from './auth/session-service.js';
import { Sessions } from './auth/sessions.js';
import { createSso } from './auth/sso/index.js';
import {
  checkAuditFile,
  checkAuthTables,
  loadMetricsToken,
  warnWithoutAdmin,
} from './auth/startup-checks.js';
import { TokenService } from './auth/token-service.js';
import type { Config } from './config/options.js';
import { ConnectionsService } from './connections/connections-service.js';
import { FleetReconciler } from './fleet/fleet-reconciler.js';
import { WorkerRegistry } from './fleet/worker-registry.js';
import { WorkersService } from './fleet/workers-service.js';
import { HealthService } from './health/health-service.js';
import { buildApp } from './http/app.js';
import { LiveHub } from './live/live-hub.js';
import type { Logger } from './log/logger.js';
import { createServiceMetrics } from './metrics/metrics-registry.js';
import { PipelineStatusService } from './pipelines/pipeline-status-service.js';
import { PipelinesService } from './pipelines/pipelines-service.js';
import { ConnectionTester } from './runtime/connection-test.js';
import { OrphanedSlots } from './runtime/orphaned-slots.js';
import { PipelineEndpoints } from './runtime/pipeline-endpoints.js';
import { installProcessGuard } from './runtime/process-guard.js';
import { ReplicationRunner } from './runtime/replication-runner.js';
import { SchemaDecisions } from './runtime/schema-decisions.js';
import { SourceTables } from './runtime/source-tables.js';
import { claimSpoolRoot } from './runtime/spool-root.js';
import { Supervisor } from './runtime/supervisor.js';
import { loadMasterKey } from './secrets/master-key.js';
import { SecretBox } from './secrets/secret-box.js';
import { ShutdownSteps } from './shutdown-steps.js';
import { connectionTypeCatalog } from './sinks/registry.js';
import { locateMetadataStore } from './store/metadata-store.js';
import { migrate } from './store/migrate.js';
import { createStorePool } from './store/pool.js';
import { createTenancyServices } from './tenancy/tenancy-services.js';
import { verificationEvents } from './verify/verification-events.js';
import { VerificationService } from './verify/verification-service.js';
import { VerificationWorker } from './verify/verification-worker.js';

/** A started service: its HTTP address and a way to stop it in reverse order of start. */
export interface RunningService {
  url: string;
  app: FastifyInstance;
  worker: WorkerRegistry;
  supervisor: Supervisor;
  /** The live feed's hub, for tests that need to publish through it. */
  live: LiveHub;
  stop(): Promise<void>;
}

export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  const authEnabled = config.auth.mode === 'enabled';
  // Checks that need no database come first, so a bad key or file fails before anything starts.
  const masterKey = loadMasterKey(config.auth.masterKeyFile, config.dataDir, !authEnabled);
  const secrets = new SecretBox(masterKey);
  const hasher = new SecretHasher(masterKey);
  const metricsToken =
    authEnabled && config.auth.metricsTokenFile ? loadMetricsToken(config.auth.metricsTokenFile) : undefined;
  const auditFile = new AuditFile(auditFilePath(config.dataDir));
  if (authEnabled) await checkAuditFile(auditFile);
  else
    await checkAuditFile(auditFile).catch((error) => logger.warn({ err: error }, 'audit file not writable'));
  const stops = new ShutdownSteps(logger);
  // An error nobody handled fails the pipeline it came from, not every pipeline with the process.
  const removeGuard = installProcessGuard(logger);
  stops.push('process guard', async () => removeGuard());
  const stop = () => stops.run();
  try {
    const location = await locateMetadataStore(config, logger);
    stops.push('metadata store', location.release);
    await migrate(location.databaseUrl, logger);
    const pool = await createStorePool(location.databaseUrl);
    stops.push('store pool', () => pool.end());
    if (authEnabled) {
      await checkAuthTables(pool);
      await warnWithoutAdmin(pool, logger);
    }

    const worker = new WorkerRegistry(pool, logger.child({ component: 'worker' }), config.leaseTtlMs);
    await worker.start();
    stops.push('worker registration', () => worker.stop());

    const connections = new ConnectionsService(pool, secrets, connectionTypeCatalog, config.connections, {
      // The supervisor, made below, resolves connections through this service: a connection
      // changes only through a request, which is served once both exist.
      changedWhileInUse: (ctx, _connection, users) => supervisor.connectionChanged(ctx.projectId, users),
    });
    const resolveConnection = (projectId: string, name: string) =>
      connections.resolve({ projectId, actor: 'system' }, name);
    const spool = claimSpoolRoot(config.spoolDir);
    stops.push('spool', async () => spool.release());
    if (spool.freed.directories > 0) {
      logger.info(
        { spoolDir: config.spoolDir, bytes: spool.freed.bytes, directories: spool.freed.directories },
        `removed the spool files of processes that are gone (${(spool.freed.bytes / 2 ** 20).toFixed(1)} MiB freed)`,
      );
    }
    const runner = new ReplicationRunner({
      pool,
      spoolDir: spool.path,
      warnRetainedWalBytes: config.slotWalWarningBytes,
      sharedStreamHoldWalBytes: config.sharedStreamHoldWalBytes,
      sharedStreamCopyRowsPerSecond: config.sharedStreamCopyRowsPerSecond,
      statusIntervalMs: config.sourceStatusIntervalMs,
      logger: logger.child({ component: 'replication' }),
      resolveConnection,
    });
    const live = new LiveHub();
    // Read at each scrape: the pipelines the supervisor below runs then.
    const metrics = createServiceMetrics(() => supervisor.running());
    const supervisor = new Supervisor({
      pool,
      runner,
      logger: logger.child({ component: 'supervisor' }),
      hub: live,
      fleet: { workerId: worker.id, leaseTtlMs: config.leaseTtlMs },
      retryMaxDelayMs: config.retryMaxDelayMs,
      // Given before start, so that the pipelines it restores are observed too.
      onStats: (pipeline, stats) => metrics.sinkBatches.attach(pipeline.name, stats),
    });
    const pipelines = new PipelinesService(pool, supervisor);
    const apply = new ApplyService(connections, pipelines);
    await supervisor.start();
    stops.push('pipelines', () => supervisor.stop());
    const fleet = new FleetReconciler(
      pool,
      supervisor,
      logger.child({ component: 'fleet' }),
      Math.min(1_000, config.leaseTtlMs / 3),
    );
    await fleet.start();
    stops.push('fleet', () => fleet.stop());

    const verificationWorker = new VerificationWorker(
      pool,
      () => supervisor.verifiable(),
      worker.id,
      logger.child({ component: 'verification' }),
      verificationEvents(pool, live, metrics.verifications, logger),
    );
    verificationWorker.start();
    stops.push('verifications', () => verificationWorker.stop());

    const sessions = new Sessions(pool, hasher, {
      ttlMs: config.auth.sessionTtlMs,
      maxLifetimeMs: config.auth.sessionMaxLifetimeMs,
      secureCookie: config.auth.cookieSecure,
    });
    if (authEnabled) {
      const sweep = setInterval(() => {
        sessions.sweep().catch((error) => logger.warn({ err: error }, 'expired sessions not swept'));
      }, 10 * 60_000);
      sweep.unref();
      stops.push('session sweep', async () => clearInterval(sweep));
    }
    const audit = new AuditLog(pool, auditFile, logger.child({ component: 'audit' }));
    // SSO needs the address the identity provider sends the browser back to.
    const sso =
      authEnabled && config.auth.publicUrl
        ? createSso({
            pool,
            secrets,
            hasher,
            sessions,
            audit,
            publicUrl: config.auth.publicUrl,
            logger: logger.child({ component: 'sso' }),
            allowInsecureIssuers: config.auth.ssoAllowInsecureIssuers ?? false,
          })
        : undefined;
    const app = await buildApp({
      logger,
      services: {
        connections,
        sourceTables: new SourceTables(new PipelineEndpoints({ pool, resolveConnection }), resolveConnection),
        connectionTester: new ConnectionTester(connections),
        orphanedSlots: new OrphanedSlots(
          pool,
          new PipelineEndpoints({ pool, resolveConnection }),
          resolveConnection,
        ),
        pipelines,
        apply,
        status: new PipelineStatusService(pool, supervisor),
        verifications: new VerificationService(
          pool,
          (id) => supervisor.stateHere(id),
          () => verificationWorker.wake(),
        ),
        health: new HealthService(pool, config.leaseTtlMs),
        live,
        schemaDecisions: new SchemaDecisions(pool, runner, supervisor, live),
        metrics,
        workers: new WorkersService(pool, config.leaseTtlMs),
        pool,
        accounts: new AccountService(pool),
        tokens: new TokenService(pool, hasher, config.auth.maxTokensPerUser),
        audit,
        sessions: authEnabled ? sessions : undefined,
        sessionAdmin: new SessionService(pool),
        sso,
        tenancy: createTenancyServices(pool, sessions),
      },
      auth: {
        mode: config.auth.mode,
        authenticator: authEnabled ? new Authenticator(pool, hasher, sessions) : undefined,
        metricsToken,
        trustedOrigins: config.auth.publicUrl ? [config.auth.publicUrl] : [],
        loginAttemptsPerMinute: config.auth.loginAttemptsPerMinute,
      },
      http: { ...config.http, listenHost: config.listen.host },
    });
    // Closing the app stops accepting connections and waits for in-flight requests.
    stops.push('HTTP server', () => app.close());
    const url = await app.listen({ host: config.listen.host, port: config.listen.port });
    return { url, app, worker, supervisor, live, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
