import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import { AddressRefusedError, addressProblem, guardedLookup } from '../../connections/address-guard.js';
import type { WebhookSettings } from './webhook-connection-type.js';

/**
 * undici's connector for a webhook connection, that connects only to addresses the connection
 * may reach: every address a name resolves to is checked in its own DNS lookup, and the socket's
 * peer once more when it is connected (that covers an address literal, which is not looked up).
 */
export function guardedConnector(settings: WebhookSettings, timeoutMs: number): buildConnector.connector {
  const connector = buildConnector({
    ca: settings.tls.ca_cert,
    cert: settings.tls.client_cert,
    key: settings.tls.client_key,
    lookup: guardedLookup(settings.reach),
    timeout: timeoutMs,
  });
  const { reach } = settings;
  return (opts, callback) =>
    connector(opts, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new Error('no socket'), null);
        return;
      }
      const peer = (socket as Socket).remoteAddress;
      const problem = peer === undefined ? 'is unknown' : addressProblem(peer, reach);
      if (problem) {
        socket.destroy();
        callback(new AddressRefusedError(`webhook ${settings.endpoint}: the peer address ${problem}`), null);
        return;
      }
      callback(null, socket);
    });
}

/** Opens one guarded connection to the receiver of `settings` (TLS included for https), sending nothing. */
export function openGuardedSocket(settings: WebhookSettings, timeoutMs: number): Promise<Socket> {
  const url = new URL(settings.url);
  const https = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    guardedConnector(settings, timeoutMs)(
      {
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        host: url.host,
        protocol: url.protocol,
        port: url.port || (https ? '443' : '80'),
        servername: https ? url.hostname : undefined,
      } as buildConnector.Options,
      (error, socket) =>
        error || !socket ? reject(error ?? new Error('no socket')) : resolve(socket as Socket),
    );
  });
}
