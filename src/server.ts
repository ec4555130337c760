import type { FastifyInstance } from 'fastify';
import type { Config } from './config/options.js';
import { ConnectionsService } from './connections/connections-service.js';
import { SYSTEM_CONTEXT } from './context.js';
import { FleetReconciler } from './fleet/fleet-reconciler.js';
import { WorkerRegistry } from './fleet/worker-registry.js';
import { HealthService } from './health/health-service.js';
import { buildApp } from './http/app.js';
import { LiveHub } from './live/live-hub.js';
import type { Logger } from './log/logger.js';
import { createServiceMetrics } from './metrics/metrics-registry.js';
import { PipelineStatusService } from './pipelines/pipeline-status-service.js';
import { PipelinesService } from './pipelines/pipelines-service.js';
import { ReplicationRunner } from './runtime/replication-runner.js';
import { SchemaDecisions } from './runtime/schema-decisions.js';
import { Supervisor } from './runtime/supervisor.js';
import { loadMasterKey } from './secrets/master-key.js';
import { SecretBox } from './secrets/secret-box.js';
import { locateMetadataStore } from './store/metadata-store.js';
import { migrate } from './store/migrate.js';
import { createStorePool } from './store/pool.js';

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
  if (config.auth.mode === 'enabled') {
    throw new Error(
      'auth.mode: "enabled" is not available in this version; use "none" behind an authenticating proxy',
    );
  }
  const secrets = new SecretBox(loadMasterKey(config.auth.masterKeyFile, config.dataDir));
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const step of stops.reverse())
      await step().catch((error) => logger.error({ err: error }, 'shutdown step failed'));
  };
  try {
    const location = await locateMetadataStore(config, logger);
    stops.push(location.release);
    await migrate(location.databaseUrl, logger);
    const pool = await createStorePool(location.databaseUrl);
    stops.push(() => pool.end());

    const worker = new WorkerRegistry(pool, logger.child({ component: 'worker' }), config.leaseTtlMs);
    await worker.start();
    stops.push(() => worker.stop());

    const connections = new ConnectionsService(pool, secrets, config.connections);
    const pipelines = new PipelinesService(pool);
    const runner = new ReplicationRunner({
      pool,
      warnRetainedWalBytes: config.slotWalWarningBytes,
      logger: logger.child({ component: 'replication' }),
      resolveConnection: (projectId, name) => connections.resolve({ projectId, actor: 'system' }, name),
    });
    const live = new LiveHub();
    const supervisor = new Supervisor(pool, runner, logger.child({ component: 'supervisor' }), live, {
      workerId: worker.id,
      leaseTtlMs: config.leaseTtlMs,
    });
    pipelines.lifecycle = supervisor;
    const metrics = createServiceMetrics(() => supervisor.running());
    // Attached before start, so that the pipelines it restores are observed too.
    supervisor.onStats = (pipeline, stats) => metrics.sinkBatches.attach(pipeline.name, stats);
    connections.events.changedWhileInUse = (ctx, _connection, users) =>
      supervisor.connectionChanged(ctx.projectId, users);
    await supervisor.start();
    stops.push(() => supervisor.stop());
    const fleet = new FleetReconciler(
      pool,
      supervisor,
      logger.child({ component: 'fleet' }),
      Math.min(1_000, config.leaseTtlMs / 3),
    );
    await fleet.start();
    stops.push(() => fleet.stop());

    const app = await buildApp({
      logger,
      services: {
        connections,
        pipelines,
        status: new PipelineStatusService(pool, supervisor),
        health: new HealthService(pool, config.leaseTtlMs),
        live,
        schemaDecisions: new SchemaDecisions(pool, runner, supervisor),
        metrics,
        fleet: { pool, leaseTtlMs: config.leaseTtlMs },
      },
      resolveContext: () => SYSTEM_CONTEXT,
    });
    // Closing the app stops accepting connections and waits for in-flight requests.
    stops.push(() => app.close());
    const url = await app.listen({ host: config.listen.host, port: config.listen.port });
    return { url, app, worker, supervisor, live, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
