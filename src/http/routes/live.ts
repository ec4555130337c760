import type { FastifyPluginAsync } from 'fastify';
import type { LiveHub } from '../../live/live-hub.js';
import { VERSION } from '../../version.js';

/** GET /v1/live: a WebSocket carrying LiveMessage JSON texts for the request's project. */
export const liveRoutes: FastifyPluginAsync<{ hub: LiveHub }> = async (app, { hub }) => {
  app.get(
    '/live',
    {
      websocket: true,
      schema: {
        tags: ['operations'],
        summary: 'Live pipeline states and progress (WebSocket, JSON messages)',
      },
    },
    (socket, request) => {
      socket.send(JSON.stringify({ type: 'hello', version: VERSION }));
      const unsubscribe = hub.subscribe(request.ctx.projectId, (message) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
      });
      socket.on('close', unsubscribe);
      socket.on('error', unsubscribe);
    },
  );
};
