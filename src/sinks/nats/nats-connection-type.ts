import { isIP } from 'node:net';
import type { ConnectionOptions } from '@nats-io/transport-node';
import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { dsnScheme, schemeGuarantees } from '../../connections/tls-guarantees.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNatsDsn, type NatsDsn, natsEndpointOf, parseNatsDsn } from './nats-dsn.js';

/** How long connecting (TCP, TLS and the NATS handshake) may take before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Pings the server this often; `MAX_PING_OUT` unanswered ones close a connection that froze. */
const PING_INTERVAL_MS = 10_000;
const MAX_PING_OUT = 2;

/** Refuses TLS material on a DSN that does not encrypt: it would be silently unused. */
function checkNatsTls(dsn: NatsDsn, secrets: ConnectionSecrets): void {
  const given = Object.keys(secrets.tls).filter(
    (k) => secrets.tls[k as keyof typeof secrets.tls] !== undefined,
  );
  if (given.length > 0 && !dsn.tls) {
    throw validationFailed(`tls.${given[0]}`, 'is given but the DSN does not encrypt: use tls://');
  }
}

/**
 * The NATS client options for a checked DSN, every field explicit. No reconnection: a lost
 * connection fails what is under way at once instead of buffering it, and the runtime opens the
 * sink again. The server's gossip of other cluster members is ignored, so the client talks to the
 * one server the DSN names. `tls://` verifies the server's certificate against `tls.ca_cert`, or
 * else the platform's trusted CAs, and its host name; `nats://` never asks for TLS, though a
 * server that requires it still gets it, verified against the platform's CAs.
 */
export function natsConnectionOptions(dsn: NatsDsn, secrets: ConnectionSecrets): ConnectionOptions {
  const server = isIP(dsn.host) === 6 ? `[${dsn.host}]:${dsn.port}` : `${dsn.host}:${dsn.port}`;
  const auth =
    dsn.user !== undefined
      ? { user: dsn.user, pass: secrets.password ?? '' }
      : secrets.password !== undefined
        ? { token: secrets.password }
        : {};
  return {
    servers: [server],
    ...auth,
    tls: dsn.tls
      ? {
          ...(secrets.tls.ca_cert !== undefined ? { ca: secrets.tls.ca_cert } : {}),
          ...(secrets.tls.client_cert !== undefined ? { cert: secrets.tls.client_cert } : {}),
          ...(secrets.tls.client_key !== undefined ? { key: secrets.tls.client_key } : {}),
        }
      : null,
    name: 'replicator',
    timeout: CONNECT_TIMEOUT_MS,
    reconnect: false,
    maxReconnectAttempts: 0,
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PING_OUT,
    ignoreClusterUpdates: true,
    noRandomize: true,
    noEcho: true,
    // A stack trace taken for every request is a cost per message, for errors the sink rewraps.
    noAsyncTraces: true,
    debug: false,
  };
}

/** NATS with JetStream, as a sink: the NATS client's options. */
export const natsConnectionType: ConnectionType<ConnectionOptions, NatsDsn> = {
  type: 'nats',
  roles: ['sink'],
  checkDsn: (dsn) => checkNatsDsn(dsn),
  endpointOf: natsEndpointOf,
  tlsGuarantees: (publicDsn) => schemeGuarantees(dsnScheme(publicDsn) === 'tls:'),
  checkTls: checkNatsTls,
  settings: async (publicDsn, secrets) => natsConnectionOptions(parseNatsDsn(publicDsn), secrets),
  // Its client library is loaded with the first check.
  reach: async (settings, timeoutMs) => (await import('./reach.js')).reachNats(settings, timeoutMs),
};
