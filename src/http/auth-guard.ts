import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { type Permission, PROJECT_PERMISSION_ROLE, roleRank } from '../auth/roles.js';
import { SESSION_COOKIE } from '../auth/sessions.js';
import { type RequestContext, SYSTEM_CONTEXT } from '../context.js';
import { AppError } from '../errors/app-error.js';
import { DEFAULT_PROJECT_ID } from '../store/pool.js';
import { isUpgrade, originOf, originTrusted } from './request-origin.js';
import { SAFE_METHODS } from './route-access.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Project and actor of the request, set before any route runs. */
    ctx: RequestContext;
  }
}

export type AuthMode = 'none' | 'enabled';

export interface AuthGuardOptions {
  mode: AuthMode;
  authenticator: Authenticator | undefined;
  /** The bearer secret that opens `/metrics` to a scraper; undefined when none is configured. */
  metricsToken: string | undefined;
  /** Origins besides the request's own that may send state-changing requests with a session cookie. */
  trustedOrigins: readonly string[];
}

/** The context of a caller that presented nothing valid (used on public routes only). */
const ANONYMOUS: RequestContext = { projectId: DEFAULT_PROJECT_ID, actor: 'anonymous' };

/**
 * 401 exactly as the specification writes it: no `code` field. Sent already serialized: a route's
 * 401 response schema (`{error, code}`) would refuse the body and turn the answer into a 500.
 */
function refuseUnauthenticated(reply: FastifyReply) {
  return reply
    .code(401)
    .header('www-authenticate', 'Bearer')
    .type('application/json; charset=utf-8')
    .send('{"error":"unauthenticated"}');
}

/** The bearer secret of `Authorization`; '' for a malformed header, undefined for none. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  // A malformed Authorization header is a credential that does not check out, not an absent one.
  return match ? match[1] : '';
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Session cookies ride along with any request a browser makes, so a state-changing request that
 * carries one must come from a page of this service: its Origin (or, failing that, its Referer)
 * must be the service's own origin or a trusted one. (A foreign Origin is refused for every caller
 * by request-origin.ts; here a missing one is refused too.)
 */
function sameOrigin(request: FastifyRequest, trusted: readonly string[]): boolean {
  const claimed = request.headers.origin ?? originOf(request.headers.referer);
  return claimed !== undefined && originTrusted(request, claimed, trusted);
}

function allowed(permission: Permission, ctx: RequestContext): boolean {
  const principal = ctx.principal;
  if (!principal) return false;
  switch (permission) {
    case 'public':
    case 'authenticated':
      return true;
    case 'organization':
    case 'metrics':
      return principal.organizationAdmin;
    default:
      return (
        principal.role !== undefined &&
        roleRank(principal.role) >= roleRank(PROJECT_PERMISSION_ROLE[permission])
      );
  }
}

/**
 * Decides who every request acts as and whether it may proceed, before its body is read. With
 * authentication off every request acts as `system`. With it on, a route's declared permission
 * is checked: anonymous callers get 401, callers whose role falls short 403 `FORBIDDEN`.
 * Routes must declare a permission (and mutating ones an audit action): a route that forgot is
 * refused at start, so none is left unguarded by accident.
 */
export function installAuthGuard(app: FastifyInstance, options: AuthGuardOptions): void {
  app.decorateRequest('ctx', null as unknown as RequestContext);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/') && route.url !== '/metrics') return;
    const config = route.config as { permission?: Permission; action?: string | false } | undefined;
    if (config?.permission === undefined) {
      throw new Error(`route ${route.method} ${route.url} declares no permission`);
    }
    const methods = [route.method].flat();
    if (methods.some((m) => !SAFE_METHODS.has(m)) && config.action === undefined) {
      throw new Error(`route ${route.method} ${route.url} declares no audit action`);
    }
    // The OpenAPI document: a public route needs no credentials, the others inherit the global ones.
    if (config.permission === 'public' && route.schema) route.schema = { ...route.schema, security: [] };
  });

  app.addHook('onRequest', async (request, reply) => {
    if (options.mode === 'none') {
      request.ctx = SYSTEM_CONTEXT;
      return;
    }
    // An unknown path is treated as needing a caller, so anonymous probing learns nothing.
    const permission = request.routeOptions.config.permission ?? 'authenticated';
    const bearer = bearerOf(request);
    if (
      permission === 'metrics' &&
      bearer &&
      options.metricsToken &&
      sameSecret(bearer, options.metricsToken)
    ) {
      request.ctx = { ...SYSTEM_CONTEXT, actor: 'metrics scraper' };
      return;
    }
    const session = bearer === undefined ? request.cookies[SESSION_COOKIE] : undefined;
    const ctx = await options.authenticator?.authenticate({ bearer, session });
    request.ctx = ctx ?? ANONYMOUS;
    if (permission === 'public') return;
    if (!ctx) return refuseUnauthenticated(reply);
    // A WebSocket handshake is a GET, but a page of any site may open one with the user's cookie
    // and read what it carries: it is checked like a state-changing call.
    if (ctx.principal?.kind === 'user' && (isUpgrade(request) || !SAFE_METHODS.has(request.method))) {
      if (!sameOrigin(request, options.trustedOrigins)) {
        throw new AppError(
          'FORBIDDEN',
          'a request signed in by session cookie must come from this service’s own origin (Origin header); scripts should use an API token',
        );
      }
    }
    if (!allowed(permission, ctx)) {
      throw new AppError('FORBIDDEN', forbiddenMessage(permission, ctx));
    }
  });
}

function forbiddenMessage(permission: Permission, ctx: RequestContext): string {
  if (permission === 'organization' || permission === 'metrics') {
    return 'this needs the admin role at organization scope';
  }
  const needed = PROJECT_PERMISSION_ROLE[permission as keyof typeof PROJECT_PERMISSION_ROLE];
  const held = ctx.principal?.role;
  return `this needs the ${needed} role in the active project; ${held ? `you hold ${held}` : 'you hold no role there'}`;
}
