import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../audit/audit-event.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { RequestContext } from '../context.js';
import { SAFE_METHODS } from './route-access.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the route's handler starts: a call refused before it never got that far. */
    handlerReached: boolean;
  }
}

const outcomeOf = (status: number): AuditEvent['outcome'] =>
  status < 400 ? 'success' : status === 401 || status === 403 ? 'denied' : 'failure';

/** The audit identity of a request's context: system, a user, or a user's token. */
function actorOf(
  ctx: RequestContext | null | undefined,
): Pick<AuditEvent, 'actorType' | 'actorId' | 'actorName'> {
  const principal = ctx?.principal;
  if (principal) {
    return {
      actorType: principal.kind === 'token' ? 'token' : 'user',
      actorId: principal.userId,
      actorName: ctx.actor,
    };
  }
  if (ctx?.actor === 'system') return { actorType: 'system', actorName: 'system' };
  return { actorType: 'anonymous', actorName: 'anonymous' };
}

/** `pipeline.state` on `/pipelines/:name/state` → `pipeline:orders`; a create: the body's name. */
function targetOf(action: string, request: FastifyRequest): string | undefined {
  const params = (request.params ?? {}) as Record<string, string | undefined>;
  // A create names its record in the body.
  const body = request.body as { name?: unknown } | undefined;
  const named = typeof body?.name === 'string' ? body.name : undefined;
  const key = params.name ?? params.id ?? params.provider ?? named;
  return key === undefined ? undefined : `${action.split('.')[0]}:${key}`;
}

/** An event about this request, with who made it and from where filled in. */
export function requestAuditEvent(
  request: FastifyRequest,
  event: Omit<AuditEvent, 'actorType' | 'actorName' | 'sourceAddress' | 'requestId'> &
    Partial<Pick<AuditEvent, 'actorType' | 'actorId' | 'actorName'>>,
): AuditEvent {
  return {
    ...actorOf(request.ctx),
    projectId: request.ctx?.projectId,
    sourceAddress: request.ip,
    requestId: request.id,
    clientRequestId: request.clientRequestId,
    ...event,
  };
}

/** The action a call is recorded under, or undefined when it is not recorded by this hook. */
function auditedAction(request: FastifyRequest, status: number): string | undefined {
  const config = request.routeOptions.config;
  // Routes declaring a permission are the API's own; unmatched URLs and static files are not calls.
  if (request.is404 || config.permission === undefined) return undefined;
  if (SAFE_METHODS.has(request.method)) return status >= 400 ? config.failureAction : undefined;
  if (config.action === false) return request.handlerReached ? undefined : config.refusalAction;
  return config.action ?? `unknown.${request.method.toLowerCase()}`;
}

/**
 * Records every state-changing call to a declared route, granted or not, before its answer leaves:
 * a client that has its answer can find the event. Which call it was is taken from the route the
 * router matched, never from the raw request target. Routes that record their own events declare
 * `action: false`, and `refusalAction` for the event of a call refused before their handler ran.
 */
export function installAuditHook(app: FastifyInstance, audit: AuditLog): void {
  app.decorateRequest('auditNote', undefined);
  app.decorateRequest('handlerReached', false);
  app.addHook('preHandler', async (request) => {
    request.handlerReached = true;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    const action = auditedAction(request, reply.statusCode);
    if (action === undefined) return payload;
    await audit.record(
      requestAuditEvent(request, {
        action,
        target: request.auditNote?.target ?? targetOf(action, request),
        outcome: outcomeOf(reply.statusCode),
        status: reply.statusCode,
        details: request.auditNote?.details,
      }),
    );
    return payload;
  });
}
