import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's own `x-request-id`, when short and of a safe alphabet; never the request's id. */
    clientRequestId: string | undefined;
  }
}

/** Long enough for a UUID, a ULID or a trace id; anything longer is not kept. */
const CLIENT_REQUEST_ID_MAX = 64;
const CLIENT_REQUEST_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${CLIENT_REQUEST_ID_MAX}}$`);

/** Fastify's `genReqId`: the service names every request itself; a caller cannot choose the id. */
export const newRequestId = (): string => randomUUID();

/** The caller's `x-request-id` if it is one id of a safe alphabet and length, else undefined. */
function clientRequestIdOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-request-id'];
  return typeof header === 'string' && CLIENT_REQUEST_ID.test(header) ? header : undefined;
}

/**
 * Keeps a well-formed caller id beside the service's own (in logs and audit events) and answers
 * with the service's id in `x-request-id`.
 */
export function installRequestIds(app: FastifyInstance): void {
  app.decorateRequest('clientRequestId', undefined);
  app.addHook('onRequest', async (request) => {
    request.clientRequestId = clientRequestIdOf(request);
    if (request.clientRequestId)
      request.log = request.log.child({ clientRequestId: request.clientRequestId });
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
}
