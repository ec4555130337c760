import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DatabasePool } from 'slonik';
import { Type } from 'typebox';
import type { AuditLog } from '../../audit/audit-log.js';
import type { AccountService } from '../../auth/account-service.js';
import { describeCaller, projectForUser } from '../../auth/caller-projects.js';
import type { Sessions } from '../../auth/sessions.js';
import { AppError } from '../../errors/app-error.js';
import { requestAuditEvent } from '../audit-hook.js';
import { loginRateLimit } from '../login-rate-limit.js';
import { LoginBody, SessionInfo, SwitchProjectBody } from '../schemas/auth.js';
import { errorResponses, ref } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

const tags = ['authentication'];

export interface AuthRoutesOptions {
  pool: DatabasePool;
  accounts: AccountService;
  /** Undefined while authentication is off: signing in is then refused with 409 AUTH_DISABLED. */
  sessions: Sessions | undefined;
  audit: AuditLog;
  loginAttemptsPerMinute: number;
}

const authDisabled = () =>
  new AppError('AUTH_DISABLED', 'authentication is off (auth.mode: none): there is nothing to sign in to');

/** Signing in and out with a password, and the session's view of who is signed in. */
export const authRoutes: FastifyPluginAsyncTypebox<AuthRoutesOptions> = async (
  app,
  { pool, accounts, sessions, audit, loginAttemptsPerMinute },
) => {
  addComponentSchemas(app);
  app.post(
    '/auth/login',
    {
      config: {
        permission: 'public',
        action: false,
        refusalAction: 'auth.login',
        actionBody: true,
        rateLimit: loginRateLimit(loginAttemptsPerMinute),
      },
      schema: {
        operationId: 'login',
        tags,
        summary:
          'Sign in with e-mail and password; sets the service_session cookie (a new session id each time)',
        body: LoginBody,
        response: { 200: ref(SessionInfo), ...errorResponses(400, 401, 409, 415, 429) },
      },
    },
    async (request, reply) => {
      if (!sessions) throw authDisabled();
      const { email, password, project } = request.body;
      const user = await accounts.verifyPassword(email, password);
      if (!user) {
        await audit.record(
          requestAuditEvent(request, {
            action: 'auth.login',
            outcome: 'denied',
            status: 401,
            actorType: 'anonymous',
            actorName: 'anonymous',
            details: { email },
          }),
        );
        throw new AppError('INVALID_CREDENTIALS', 'the e-mail or the password is wrong');
      }
      const chosen = project === undefined ? undefined : await projectForUser(pool, user.id, project);
      const projectId = await sessions.start(request, reply, user.id, chosen);
      await audit.record(
        requestAuditEvent(request, {
          action: 'auth.login',
          outcome: 'success',
          status: 200,
          actorType: 'user',
          actorId: user.id,
          actorName: user.email,
          // The project the new session acts in, not the anonymous caller's default.
          projectId,
        }),
      );
      return describeCaller(pool, { userId: user.id, via: 'session', projectId });
    },
  );

  app.post(
    '/auth/logout',
    {
      config: { permission: 'public', action: 'auth.logout' },
      schema: {
        operationId: 'logout',
        tags,
        summary: 'Sign out: ends the session the cookie names and clears the cookie (204 even without one)',
        response: { 204: Type.Null(), ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      if (!sessions) throw authDisabled();
      await sessions.end(request, reply);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/auth/session',
    {
      config: { permission: 'authenticated' },
      schema: {
        operationId: 'getSession',
        tags,
        summary: 'Who is signed in: the user, the active project and the role held there',
        response: { 200: ref(SessionInfo), ...errorResponses(401, 409) },
      },
    },
    async (request) => {
      const principal = request.ctx.principal;
      if (!principal) throw authDisabled();
      return describeCaller(pool, {
        userId: principal.userId,
        via: principal.kind === 'token' ? 'token' : 'session',
        projectId: request.ctx.projectId,
        role: principal.role,
      });
    },
  );

  app.put(
    '/auth/session',
    {
      config: { permission: 'authenticated', action: 'session.switch_project', actionBody: true },
      schema: {
        operationId: 'switchProject',
        tags,
        summary:
          'Switch the active project of a session (a token keeps the project it was made in); 404 for a project you hold no role in',
        body: SwitchProjectBody,
        response: { 200: ref(SessionInfo), ...errorResponses(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const principal = request.ctx.principal;
      if (!principal || !sessions) throw authDisabled();
      if (!principal.sessionHash) {
        throw new AppError(
          'VALIDATION_FAILED',
          'a token acts in the project it was made in; make a token for the other project',
        );
      }
      const projectId = await projectForUser(pool, principal.userId, request.body.project);
      await sessions.switchProject(principal.sessionHash, projectId);
      return describeCaller(pool, { userId: principal.userId, via: 'session', projectId });
    },
  );
};
