import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditEvent } from '../audit/audit-event.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { RequestContext } from '../context.js';
import { SAFE_METHODS } from './route-access.js';

export const outcomeOf = (status: number): AuditEvent['outcome'] =>
  status < 400 ? 'success' : status === 401 || status === 403 ? 'denied' : 'failure';

/** The audit identity of a request's context: system, a user, or a user's token. */
export function actorOf(
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
    ...event,
  };
}

/**
 * Records every state-changing `/v1/` call, granted or not, before its answer leaves: a client that
 * has its answer can find the event. Routes that record their own events declare `action: false`.
 */
export function installAuditHook(app: FastifyInstance, audit: AuditLog): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (SAFE_METHODS.has(request.method) || !request.url.startsWith('/v1/')) return payload;
    const action = request.routeOptions.config.action;
    if (action === false) return payload;
    const name = action ?? `unknown.${request.method.toLowerCase()}`;
    await audit.record(
      requestAuditEvent(request, {
        action: name,
        target: targetOf(name, request),
        outcome: outcomeOf(reply.statusCode),
        status: reply.statusCode,
      }),
    );
    return payload;
  });
}
