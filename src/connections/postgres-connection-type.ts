import type pg from 'pg';
import type { ConnectionType } from './connection-types.js';
import { checkTlsSettings, pgClientConfig } from './pg-client-config.js';
import { endpointOf, type PostgresDsn, parsePostgresDsn } from './postgres-dsn.js';
import { dsnParams, sslModeGuarantees } from './tls-guarantees.js';

/** sslmode's promises, and each TLS file named: another CA file is another trust anchor. */
function postgresTlsGuarantees(publicDsn: string): string[] {
  const params = dsnParams(publicDsn);
  const rootcert = params.get('sslrootcert');
  const mode = rootcert === 'system' ? 'verify-full' : params.get('sslmode');
  const files = ['sslrootcert', 'sslcert', 'sslkey'].flatMap((key) => {
    const value = params.get(key);
    return value === null ? [] : [`${key}=${value}`];
  });
  return [...sslModeGuarantees(mode), ...files];
}

/** PostgreSQL, as a source and as a sink: node-postgres' client settings. */
export const postgresConnectionType: ConnectionType<pg.ClientConfig, PostgresDsn> = {
  type: 'postgres',
  roles: ['source', 'sink'],
  checkDsn: (dsn, policy) => parsePostgresDsn(dsn, policy),
  endpointOf,
  tlsGuarantees: postgresTlsGuarantees,
  checkTls: (dsn, secrets) => checkTlsSettings(dsn, secrets.tls),
  settings: (publicDsn, secrets, policy) =>
    pgClientConfig(parsePostgresDsn(publicDsn, policy), secrets, policy),
};
