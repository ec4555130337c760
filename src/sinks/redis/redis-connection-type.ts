import { isIP } from 'node:net';
import type { RedisOptions } from 'ioredis';
import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { dsnScheme, schemeGuarantees } from '../../connections/tls-guarantees.js';
import { validationFailed } from '../../errors/app-error.js';
import { parseRedisDsn, type RedisDsn, redisEndpointOf } from './redis-dsn.js';

/** How long connecting may take before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;
/**
 * How long one command may run before its promise fails: a batch is one script of up to
 * `batch_max_events` XADDs, well under this; a frozen server must not hang the pipeline.
 */
const COMMAND_TIMEOUT_MS = 60_000;

/** Refuses TLS material on a DSN that does not encrypt: it would be silently unused. */
function checkRedisTls(dsn: RedisDsn, secrets: ConnectionSecrets): void {
  const given = Object.keys(secrets.tls).filter(
    (k) => secrets.tls[k as keyof typeof secrets.tls] !== undefined,
  );
  if (given.length > 0 && !dsn.tls) {
    throw validationFailed(`tls.${given[0]}`, 'is given but the DSN does not encrypt: use rediss://');
  }
}

/**
 * The ioredis options for a checked DSN, every field explicit. Commands fail at once while the
 * connection is down (no offline queue) and are retried at most once, so a server that is down
 * fails the batch rather than buffering it without end; the caller connects (`lazyConnect`).
 * `rediss://` verifies the server's certificate against `tls.ca_cert`, or else the platform's
 * trusted CAs, and its host name.
 */
export function redisOptions(dsn: RedisDsn, secrets: ConnectionSecrets): RedisOptions {
  return {
    host: dsn.host,
    port: dsn.port,
    db: dsn.db,
    username: dsn.username,
    password: secrets.password,
    tls: dsn.tls
      ? {
          ca: secrets.tls.ca_cert,
          cert: secrets.tls.client_cert,
          key: secrets.tls.client_key,
          // SNI takes a host name, never an address; the certificate is checked against either.
          servername: isIP(dsn.host) === 0 ? dsn.host : undefined,
        }
      : undefined,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
    keepAlive: 30_000,
    connectionName: 'replicator',
  };
}

/** Redis, as a sink (streams): ioredis' options. */
export const redisConnectionType: ConnectionType<RedisOptions, RedisDsn> = {
  type: 'redis',
  roles: ['sink'],
  checkDsn: (dsn) => parseRedisDsn(dsn),
  endpointOf: redisEndpointOf,
  tlsGuarantees: (publicDsn) => schemeGuarantees(dsnScheme(publicDsn) === 'rediss:'),
  checkTls: checkRedisTls,
  settings: async (publicDsn, secrets) => redisOptions(parseRedisDsn(publicDsn), secrets),
  // Its client library is loaded with the first check.
  reach: async (settings, timeoutMs) => (await import('./reach.js')).reachRedis(settings, timeoutMs),
};
