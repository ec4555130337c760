import { isIP } from 'node:net';
import type { Options, SocketOptions } from 'amqplib';
import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { dsnScheme, schemeGuarantees } from '../../connections/tls-guarantees.js';
import { validationFailed } from '../../errors/app-error.js';
import { parseRabbitmqDsn, type RabbitmqDsn, rabbitmqEndpointOf } from './rabbitmq-dsn.js';

/** How long connecting (TCP, TLS and the AMQP handshake) may take before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Heartbeat asked for when the DSN names none: a silent network loss is noticed within two of them. */
const DEFAULT_HEARTBEAT_SECONDS = 30;

/**
 * What the RabbitMQ sink connects with. The connect options are an object, never a URL: amqplib
 * would otherwise parse the password out of a string, and a string can end up in a message.
 */
export interface RabbitmqSettings {
  connect: Options.Connect;
  socket: SocketOptions;
  /** `host:port (vhost /)`, for error messages: it holds no secret. */
  endpoint: string;
  /** The password, so that an error that happened to carry it can be cleaned before it is shown. */
  password: string | undefined;
}

/** Refuses TLS material on a DSN that does not encrypt: it would be silently unused. */
function checkRabbitmqTls(dsn: RabbitmqDsn, secrets: ConnectionSecrets): void {
  const given = Object.keys(secrets.tls).filter(
    (k) => secrets.tls[k as keyof typeof secrets.tls] !== undefined,
  );
  if (given.length > 0 && !dsn.tls) {
    throw validationFailed(`tls.${given[0]}`, 'is given but the DSN does not encrypt: use amqps://');
  }
}

/**
 * The amqplib options for a checked DSN, every field explicit. `amqps://` verifies the server's
 * certificate against `tls.ca_cert`, or else the platform's trusted CAs, and its host name; a
 * client certificate is sent when given.
 */
export function rabbitmqSettings(dsn: RabbitmqDsn, secrets: ConnectionSecrets): RabbitmqSettings {
  const host = isIP(dsn.host) === 6 ? `[${dsn.host}]` : dsn.host;
  return {
    connect: {
      protocol: dsn.tls ? 'amqps' : 'amqp',
      hostname: dsn.host,
      port: dsn.port,
      vhost: dsn.vhost,
      username: dsn.user,
      password: secrets.password ?? '',
      heartbeat: dsn.heartbeat ?? DEFAULT_HEARTBEAT_SECONDS,
      locale: 'en_US',
    },
    socket: {
      timeout: CONNECT_TIMEOUT_MS,
      noDelay: true,
      keepAlive: true,
      keepAliveDelay: 30_000,
      clientProperties: { connection_name: 'replicator' },
      ...(dsn.tls
        ? {
            ca: secrets.tls.ca_cert,
            cert: secrets.tls.client_cert,
            key: secrets.tls.client_key,
            rejectUnauthorized: true,
            // SNI takes a host name, never an address; the certificate is checked against either.
            servername: isIP(dsn.host) === 0 ? dsn.host : undefined,
          }
        : {}),
    },
    endpoint: `${host}:${dsn.port} (vhost ${dsn.vhost})`,
    password: secrets.password,
  };
}

/** RabbitMQ, as a sink (exchanges, with publisher confirms): amqplib's options. */
export const rabbitmqConnectionType: ConnectionType<RabbitmqSettings, RabbitmqDsn> = {
  type: 'rabbitmq',
  roles: ['sink'],
  checkDsn: (dsn) => parseRabbitmqDsn(dsn),
  endpointOf: rabbitmqEndpointOf,
  tlsGuarantees: (publicDsn) => schemeGuarantees(dsnScheme(publicDsn) === 'amqps:'),
  checkTls: checkRabbitmqTls,
  settings: async (publicDsn, secrets) => rabbitmqSettings(parseRabbitmqDsn(publicDsn), secrets),
  // Its client library is loaded with the first check.
  reach: async (settings, timeoutMs) => (await import('./reach.js')).reachRabbitmq(settings, timeoutMs),
};
