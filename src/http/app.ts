import cookie from '@fastify/cookie';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { DatabasePool } from 'slonik';
import type { ApplyService } from '../apply/apply-service.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { AccountService } from '../auth/account-service.js';
import type { SessionService } from '../auth/session-service.js';
import type { Sessions } from '../auth/sessions.js';
import type { Sso } from '../auth/sso/index.js';
import type { TokenService } from '../auth/token-service.js';
import type { HttpSettings } from '../config/options.js';
import type { ConnectionsService } from '../connections/connections-service.js';
import type { WorkersService } from '../fleet/workers-service.js';
import type { HealthService } from '../health/health-service.js';
import type { LiveHub } from '../live/live-hub.js';
import type { Logger } from '../log/logger.js';
import { installHttpMetrics } from '../metrics/http-metrics.js';
import type { ServiceMetrics } from '../metrics/metrics-registry.js';
import type { PipelineStatusService } from '../pipelines/pipeline-status-service.js';
import type { PipelinesService } from '../pipelines/pipelines-service.js';
import type { ConnectionTester } from '../runtime/connection-test.js';
import type { OrphanedSlots } from '../runtime/orphaned-slots.js';
import type { SchemaDecisions } from '../runtime/schema-decisions.js';
import type { SourceTables } from '../runtime/source-tables.js';
import type { TenancyServices } from '../tenancy/tenancy-services.js';
import type { VerificationService } from '../verify/verification-service.js';
import { VERSION } from '../version.js';
import { installAuditHook } from './audit-hook.js';
import { type AuthGuardOptions, installAuthGuard } from './auth-guard.js';
import { clientErrorHandler } from './client-error.js';
import { installConnectionLimits, TIMEOUT_CHECK_INTERVAL_MS } from './connection-limits.js';
import { installCredentialChanges } from './credential-changes.js';
import { installDashboard } from './dashboard.js';
import { installErrorHandling } from './error-handler.js';
import { frameworkErrors } from './framework-errors.js';
import { LiveRegistry } from './live-registry.js';
import { installNotFoundHandling } from './not-found.js';
import { installNulGuard } from './nul-guard.js';
import { installProjectSelection } from './project-selection.js';
import { installRequestIds, newRequestId } from './request-id.js';
import { installRequestLog } from './request-log.js';
import { installRequestOriginChecks } from './request-origin.js';
import { installRequestTargetCheck, originForm } from './request-target.js';
import { adminRoutes } from './routes/admin.js';
import { applyRoutes } from './routes/apply.js';
import { auditRoutes } from './routes/audit.js';
import { authRoutes } from './routes/auth.js';
import { connectionRoutes } from './routes/connections.js';
import { healthRoutes } from './routes/health.js';
import { liveRoutes } from './routes/live.js';
import { metricsRoutes } from './routes/metrics.js';
import { organizationRoutes } from './routes/organization.js';
import { pipelineStatusRoutes } from './routes/pipeline-status.js';
import { pipelineRoutes } from './routes/pipelines.js';
import { projectRoutes } from './routes/projects.js';
import { roleBindingRoutes } from './routes/role-bindings.js';
import { schemaReviewRoutes } from './routes/schema-review.js';
import { sessionRoutes } from './routes/sessions.js';
import { ssoRoutes } from './routes/sso.js';
import { tokenRoutes } from './routes/tokens.js';
import { userRoutes } from './routes/users.js';
import { verificationRoutes } from './routes/verifications.js';
import { workerRoutes } from './routes/workers.js';
import { workspaceRoutes } from './routes/workspaces.js';
import { installStrictQuery } from './strict-query.js';
import { installWebSocket } from './websocket.js';

export interface AppServices {
  connections: ConnectionsService;
  sourceTables: SourceTables;
  connectionTester: ConnectionTester;
  orphanedSlots: OrphanedSlots;
  apply: ApplyService;
  pipelines: PipelinesService;
  status: PipelineStatusService;
  verifications: VerificationService;
  health: HealthService;
  live: LiveHub;
  schemaDecisions: SchemaDecisions;
  metrics: ServiceMetrics;
  /** The instances of the fleet. */
  workers: WorkersService;
  /** The metadata store, for the project choice and the sign-in routes, which read it through auth/. */
  pool: DatabasePool;
  accounts: AccountService;
  tokens: TokenService;
  audit: AuditLog;
  /** Absent while authentication is off. */
  sessions: Sessions | undefined;
  sessionAdmin: SessionService;
  /** Present when authentication is on and `auth.public_url` is set. */
  sso: Sso | undefined;
  /** Users, workspaces, projects and role bindings, for organization admins. */
  tenancy: TenancyServices;
}

export interface AppOptions {
  logger: Logger;
  services: AppServices;
  auth: AuthGuardOptions & { loginAttemptsPerMinute: number };
  /** Connection limits, time limits and the names the service answers for. */
  http: HttpSettings & { listenHost: string };
}

/** Request bodies larger than this are refused with 413. */
const BODY_LIMIT_BYTES = 1024 * 1024;

export async function buildApp({ logger, services, auth, http }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // Slow clients must not hold connections (and file descriptors) for long.
    requestTimeout: http.requestTimeoutMs,
    http: { headersTimeout: http.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // The service names every request; a caller's x-request-id is kept apart (request-id.ts).
    requestIdHeader: false,
    genReqId: newRequestId,
    rewriteUrl: originForm,
    return503OnClosing: true,
    // One line a request, bounded for anonymous refusals (request-log.ts), rather than two of each.
    logController: new LogController({ disableRequestLogging: true }),
    clientErrorHandler,
    frameworkErrors,
    ajv: {
      // Bodies are checked as sent: no silent coercion or stripping of unknown fields.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, verbose: true },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  installConnectionLimits(app.server, http);

  installRequestIds(app);
  installRequestLog(app);
  installRequestTargetCheck(app);
  // The API speaks JSON only; anything else is refused with 415 rather than parsed as text.
  app.removeContentTypeParser('text/plain');
  installErrorHandling(app);
  installNotFoundHandling(app);
  installStrictQuery(app);
  installNulGuard(app);
  await app.register(cookie);
  await app.register(rateLimit, { global: false });
  installHttpMetrics(app, services.metrics.http);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Replicator API', version: VERSION.slice(1) },
      // Relative: the service's own address, whatever host and port it is reached at.
      servers: [{ url: '/', description: 'this service' }],
      tags: [
        { name: 'connections', description: 'PostgreSQL sources and sinks, their DSNs and TLS material' },
        {
          name: 'pipelines',
          description: 'Replication pipelines: definitions, state, backfills, metrics, runs',
        },
        { name: 'schema review', description: "Changes of a source table's shape waiting for a decision" },
        { name: 'operations', description: 'Health, workers, metrics and the live feed' },
        { name: 'authentication', description: 'Sign-in, sessions, API tokens and single sign-on' },
        { name: 'users', description: 'Users of the organization' },
        { name: 'workspaces', description: 'Workspaces, which hold projects' },
        { name: 'projects', description: 'Projects, which hold connections and pipelines' },
        {
          name: 'role bindings',
          description: 'Roles held by users at organization, workspace or project scope',
        },
        { name: 'sso providers', description: "The organization's OIDC and SAML identity providers" },
      ],
      components: {
        securitySchemes: {
          bearerToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API token (rpl_tok_...), made with POST /v1/tokens',
          },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'service_session',
            description: 'The session cookie set by POST /v1/auth/login or an SSO login',
          },
        },
      },
      // Required while auth.mode is enabled; routes marked public override it with an empty list.
      security: [{ bearerToken: [] }, { sessionCookie: [] }],
    },
    // Schemas with an `$id` (schemas/components.ts) keep it as their name in components.schemas.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });

  await installWebSocket(app);
  // After the WebSocket plugin's own hook, which marks upgrade requests so that a refused one's
  // socket is closed; the Host and Origin checks before the guard, as they hold in every mode.
  installRequestOriginChecks(app, {
    listenHost: http.listenHost,
    allowedHosts: http.allowedHosts,
    trustedOrigins: auth.trustedOrigins,
  });
  installAuthGuard(app, auth);
  const liveRegistry = new LiveRegistry(
    { perUser: http.liveSocketsPerUser, perAddress: http.liveSocketsPerAddress },
    auth.authenticator,
    (error) => logger.warn({ err: error }, 'live sockets not checked again'),
  );
  app.addHook('onClose', async () => liveRegistry.stop());
  installCredentialChanges(app, liveRegistry);
  installProjectSelection(app, auth.mode, services.pool);
  installAuditHook(app, services.audit);
  await app.register(metricsRoutes, { registry: services.metrics.registry });
  await installDashboard(app, auth.mode);
  await app.register(
    async (v1) => {
      await v1.register(connectionRoutes, {
        connections: services.connections,
        sourceTables: services.sourceTables,
        orphanedSlots: services.orphanedSlots,
        tester: services.connectionTester,
      });
      await v1.register(pipelineRoutes, { pipelines: services.pipelines });
      await v1.register(pipelineStatusRoutes, { status: services.status });
      await v1.register(verificationRoutes, { verifications: services.verifications });
      await v1.register(healthRoutes, { health: services.health });
      await v1.register(liveRoutes, { hub: services.live, registry: liveRegistry });
      await v1.register(schemaReviewRoutes, { decisions: services.schemaDecisions });
      await v1.register(workerRoutes, { workers: services.workers });
      await v1.register(adminRoutes, {
        accounts: services.accounts,
        loginAttemptsPerMinute: auth.loginAttemptsPerMinute,
      });
      await v1.register(authRoutes, {
        pool: services.pool,
        accounts: services.accounts,
        sessions: services.sessions,
        audit: services.audit,
        loginAttemptsPerMinute: auth.loginAttemptsPerMinute,
      });
      await v1.register(applyRoutes, { apply: services.apply });
      await v1.register(tokenRoutes, { tokens: services.tokens });
      await v1.register(sessionRoutes, { sessions: services.sessionAdmin });
      if (services.sso) await v1.register(ssoRoutes, { sso: services.sso });
      await v1.register(auditRoutes, { audit: services.audit });
      await v1.register(organizationRoutes, { organization: services.tenancy.organization });
      await v1.register(userRoutes, { users: services.tenancy.users });
      await v1.register(workspaceRoutes, { workspaces: services.tenancy.workspaces });
      await v1.register(projectRoutes, { projects: services.tenancy.projects });
      await v1.register(roleBindingRoutes, { roleBindings: services.tenancy.roleBindings });
      v1.get('/openapi.json', { config: { permission: 'authenticated' }, schema: { hide: true } }, () =>
        app.swagger(),
      );
    },
    { prefix: '/v1' },
  );
  return app;
}
