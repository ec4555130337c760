import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RequestContext } from '../context.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Project and actor of the request, set before any route runs. */
    ctx: RequestContext;
  }
}

/** Decides who a request acts as; the authentication layer provides its own resolver. */
export type ContextResolver = (request: FastifyRequest) => Promise<RequestContext> | RequestContext;

export function installRequestContext(app: FastifyInstance, resolve: ContextResolver): void {
  app.decorateRequest('ctx', null as unknown as RequestContext);
  app.addHook('onRequest', async (request) => {
    request.ctx = await resolve(request);
  });
}
