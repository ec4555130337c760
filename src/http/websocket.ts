import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';
import { LIVE_LIMITS } from './live-socket.js';
import { writeRawError } from './raw-error.js';

/**
 * Registers @fastify/websocket with the live feed's limits, and makes every refused upgrade an
 * `{error, code}` answer: a handshake ws refuses, and an upgrade to a route that is not a
 * WebSocket (which would otherwise be accepted, then closed at once).
 */
export async function installWebSocket(app: FastifyInstance): Promise<void> {
  await app.register(websocket, {
    options: { maxPayload: LIVE_LIMITS.maxPayloadBytes },
    errorHandler(error, socket, request) {
      // A client's protocol error (a frame too big, a bad opcode): ws has already sent the close.
      const fromClient = (error as { code?: string }).code?.startsWith('WS_ERR_');
      request.log[fromClient ? 'info' : 'error']({ err: error }, 'live socket error');
      if (socket.readyState === socket.OPEN) socket.close(1011, 'internal error');
    },
  });

  app.websocketServer.on('wsClientError', (error, socket) =>
    writeRawError(socket, 'BAD_REQUEST', `WebSocket handshake refused: ${error.message}`, {
      'Sec-WebSocket-Version': '13, 8',
    }),
  );

  const socketRoutes = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.wsHandler || route.websocket) socketRoutes.add(route.url);
  });
  app.addHook('onRequest', async (request) => {
    if (request.ws && !request.is404 && !socketRoutes.has(request.routeOptions.url ?? '')) {
      throw new AppError(
        'BAD_REQUEST',
        `${request.method} ${request.url.split('?')[0]} is not a WebSocket; upgrade is refused`,
      );
    }
  });
}
