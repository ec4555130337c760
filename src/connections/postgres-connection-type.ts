import type pg from 'pg';
import type { ConnectionType } from './connection-types.js';
import { checkTlsSettings, pgClientConfig } from './pg-client-config.js';
import { endpointOf, type PostgresDsn, parsePostgresDsn } from './postgres-dsn.js';

/** PostgreSQL, as a source and as a sink: node-postgres' client settings. */
export const postgresConnectionType: ConnectionType<pg.ClientConfig, PostgresDsn> = {
  type: 'postgres',
  roles: ['source', 'sink'],
  checkDsn: (dsn, policy) => parsePostgresDsn(dsn, policy),
  endpointOf,
  checkTls: (dsn, secrets) => checkTlsSettings(dsn, secrets.tls),
  settings: (publicDsn, secrets, policy) =>
    pgClientConfig(parsePostgresDsn(publicDsn, policy), secrets, policy),
};
