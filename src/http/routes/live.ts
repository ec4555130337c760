import type { FastifyPluginAsync } from 'fastify';
import { projectScope } from '../../context.js';
import { AppError } from '../../errors/app-error.js';
import type { LiveHub } from '../../live/live-hub.js';
import { VERSION } from '../../version.js';
import { LIVE_LIMITS, LiveSocket } from '../live-socket.js';
import { errorResponses } from '../schemas/common.js';
import { addComponentSchemas } from '../schemas/components.js';

/** GET /v1/live: a WebSocket carrying LiveMessage JSON texts for the request's project (every project's with authentication off). */
export const liveRoutes: FastifyPluginAsync<{ hub: LiveHub }> = async (app, { hub }) => {
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
        `a client with more than ${LIVE_LIMITS.maxBufferedBytes / 1024 ** 2} MiB unsent with 1013.`,
      response: {
        101: { description: 'Switching Protocols: the feed follows', type: 'null' },
        ...errorResponses(400, 426),
      },
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
      const live = new LiveSocket(socket, () => unsubscribe());
      live.send({ type: 'hello', version: VERSION });
      unsubscribe = hub.subscribe(projectScope(request.ctx), (message) => live.send(message));
    },
  });
};
