import type { ConnectionOptions, SslOptions } from 'mysql2';
import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { dsnParams, sslModeGuarantees } from '../../connections/tls-guarantees.js';
import type { TlsMaterial } from '../../connections/tls-material.js';
import { validationFailed } from '../../errors/app-error.js';
import { type MysqlDsn, mysqlEndpointOf, parseMysqlDsn } from './mysql-dsn.js';

/** How long a connection attempt may take before it fails. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Refuses TLS material that does not fit the DSN: material needs an encrypting sslmode, and
 * verify-ca needs the CA to verify with.
 */
export function checkMysqlTls(dsn: MysqlDsn, tls: TlsMaterial): void {
  const given = Object.keys(tls).filter((k) => tls[k as keyof TlsMaterial] !== undefined);
  if (given.length > 0 && (dsn.sslmode === undefined || dsn.sslmode === 'disable')) {
    throw validationFailed(
      `tls.${given[0]}`,
      'is given but the DSN does not encrypt: add sslmode=verify-full (or require, verify-ca)',
    );
  }
  if (dsn.sslmode === 'verify-ca' && tls.ca_cert === undefined) {
    throw validationFailed(
      'tls.ca_cert',
      'is required by sslmode=verify-ca (the CA to verify the server with)',
    );
  }
}

/**
 * TLS as libpq means its modes: `require` encrypts without verifying (unless a CA is given, then
 * it verifies the chain), `verify-ca` verifies the chain, `verify-full` the chain and the host
 * name, against the given CA or else the platform's trusted CAs.
 */
function sslOptions(dsn: MysqlDsn, tls: TlsMaterial): SslOptions | undefined {
  if (dsn.sslmode === undefined || dsn.sslmode === 'disable') return undefined;
  const material: SslOptions = {};
  if (tls.ca_cert !== undefined) material.ca = tls.ca_cert;
  if (tls.client_cert !== undefined) material.cert = tls.client_cert;
  if (tls.client_key !== undefined) material.key = tls.client_key;
  const verifyChain = dsn.sslmode !== 'require' || tls.ca_cert !== undefined;
  return { ...material, rejectUnauthorized: verifyChain, verifyIdentity: dsn.sslmode === 'verify-full' };
}

/**
 * The mysql2 connection options for a checked DSN, every field explicit: nothing is read from an
 * option file or the environment, the server may never ask for a local file (LOCAL_FILES is off
 * and no stream factory is given), and one statement is sent at a time.
 */
export function mysqlConnectionOptions(dsn: MysqlDsn, secrets: ConnectionSecrets): ConnectionOptions {
  const ssl = sslOptions(dsn, secrets.tls);
  return {
    host: dsn.host,
    port: dsn.port,
    database: dsn.database,
    user: dsn.user,
    password: secrets.password ?? '',
    ...(ssl ? { ssl } : {}),
    connectTimeout: CONNECT_TIMEOUT_MS,
    flags: ['-LOCAL_FILES'],
    multipleStatements: false,
    charset: 'utf8mb4',
  };
}

/** MySQL and MariaDB, as a sink: mysql2's connection options. */
export const mysqlConnectionType: ConnectionType<ConnectionOptions, MysqlDsn> = {
  type: 'mysql',
  roles: ['sink'],
  checkDsn: (dsn) => parseMysqlDsn(dsn),
  endpointOf: mysqlEndpointOf,
  tlsGuarantees: (publicDsn) => sslModeGuarantees(dsnParams(publicDsn).get('sslmode')),
  checkTls: (dsn, secrets) => checkMysqlTls(dsn, secrets.tls),
  settings: async (publicDsn, secrets) => mysqlConnectionOptions(parseMysqlDsn(publicDsn), secrets),
  // Its client library is loaded with the first check.
  reach: async (settings, timeoutMs) => (await import('./reach.js')).reachMysql(settings, timeoutMs),
};
