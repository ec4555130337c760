import type { FastifyPluginAsync } from 'fastify';
import { SESSION_COOKIE } from '../../auth/sessions.js';
import { projectScope } from '../../context.js';
import { AppError } from '../../errors/app-error.js';
import type { LiveHub } from '../../live/live-hub.js';
import { VERSION } from '../../version.js';
import { bearerOf } from '../auth-guard.js';
import type { LiveRegistry } from '../live-registry.js';
import { CLOSE_TRY_AGAIN_LATER, LIVE_LIMITS, LiveSocket } from '../live-socket.js';
import { errorResponses } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

/** GET /v1/live: a WebSocket carrying LiveMessage JSON texts for the request's project (every project's with authentication off). */
export const liveRoutes: FastifyPluginAsync<{ hub: LiveHub; registry: LiveRegistry }> = async (
  app,
  { hub, registry },
) => {
  addComponentSchemas(app);
  app.route({
    method: 'GET',
    url: '/live',
    config: { permission: 'read' },
    schema: {
      operationId: 'openLiveFeed',
      tags: ['operations'],
      summary: 'Live pipeline states and progress (WebSocket, JSON messages)',
      description:
        `Open with an Upgrade: websocket request; a plain GET is answered 426. A client frame over ` +
        `${LIVE_LIMITS.maxPayloadBytes / 1024} KiB is closed with 1009, more than ` +
        `${LIVE_LIMITS.inboundMessages} client messages in ${LIVE_LIMITS.inboundWindowMs / 1000} s with 1008, ` +
        `a client with more than ${LIVE_LIMITS.maxBufferedBytes / 1024 ** 2} MiB unsent with 1013. ` +
        'A user, and a client address, may hold a limited number of sockets (429 beyond); a socket whose ' +
        'token is revoked, session ended, user disabled or role removed is closed with 1008.',
      response: {
        101: { description: 'Switching Protocols: the feed follows', type: 'null' },
        ...errorResponses(400, 426, 429),
      },
    },
    preHandler: async (request) => {
      if (!request.ws) return;
      const refused = registry.refusal(request.ctx, request.ip);
      if (refused) throw new AppError('TOO_MANY_SOCKETS', refused);
    },
    handler: async (request, reply) => {
      reply.header('upgrade', 'websocket');
      throw new AppError(
        'UPGRADE_REQUIRED',
        `${request.method} /v1/live is a WebSocket: open it with an Upgrade: websocket request`,
      );
    },
    wsHandler: (socket, request) => {
      let unsubscribe = () => {};
      let unregister = () => {};
      const live = new LiveSocket(socket, () => {
        unsubscribe();
        unregister();
      });
      // Handshakes that passed the check together may overshoot the cap: the later ones go.
      if (registry.refusal(request.ctx, request.ip)) {
        live.close(CLOSE_TRY_AGAIN_LATER, 'too many live sockets: close one first');
        return;
      }
      const principal = request.ctx.principal;
      unregister = registry.add({
        address: request.ip,
        ctx: request.ctx,
        credentials: principal
          ? {
              bearer: bearerOf(request),
              session: bearerOf(request) === undefined ? request.cookies[SESSION_COOKIE] : undefined,
            }
          : undefined,
        close: (code, reason) => live.close(code, reason),
      });
      live.send({ type: 'hello', version: VERSION });
      unsubscribe = hub.subscribe(projectScope(request.ctx), (message) => live.send(message));
    },
  });
};
