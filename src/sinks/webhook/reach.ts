import type { Socket } from 'node:net';
import { type ReachCheck, reached, unreached } from '../../connections/reach-check.js';
import { openGuardedSocket } from './guarded-connector.js';
import type { WebhookSettings } from './webhook-connection-type.js';

/** A webhook receiver: a connection is opened (to an address its DSN may reach) and closed; nothing is posted. */
export async function reachWebhook(settings: WebhookSettings, timeoutMs: number): Promise<ReachCheck[]> {
  let socket: Socket;
  try {
    socket = await openGuardedSocket(settings, timeoutMs);
  } catch (error) {
    return [unreached(settings.endpoint, error)];
  }
  socket.destroy();
  return [reached(`${settings.endpoint} (nothing was sent)`)];
}
