import type { ConnectionOptions } from 'node:tls';
import type pg from 'pg';
import { validationFailed } from '../errors/app-error.js';
import { invalidDsn } from './dsn-text.js';
import { type LocalAccessPolicy, NO_LOCAL_ACCESS, readTlsFile } from './local-access.js';
import { type PostgresDsn, parsePostgresDsn } from './postgres-dsn.js';
import type { TlsMaterial } from './tls-material.js';

/** How long a connection attempt may take before it fails, unless a caller sets its own. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Checks that a DSN's TLS settings and the TLS material given with it make sense together, at
 * the time they are written: material needs an encrypting sslmode, verify-ca needs a CA, and a
 * certificate is given either as PEM text or as a file, not both.
 */
export function checkTlsSettings(dsn: PostgresDsn, tls: TlsMaterial): void {
  const given = Object.keys(tls).filter((k) => tls[k as keyof TlsMaterial] !== undefined);
  if (given.length > 0 && (dsn.sslmode === undefined || dsn.sslmode === 'disable')) {
    throw validationFailed(
      `tls.${given[0]}`,
      'is given but the DSN does not encrypt: add sslmode=verify-full (or require, verify-ca)',
    );
  }
  if (tls.ca_cert !== undefined && dsn.sslrootcert !== undefined) {
    throw validationFailed('tls.ca_cert', 'is given and the DSN has sslrootcert too: keep one');
  }
  if (tls.client_cert !== undefined && (dsn.sslcert !== undefined || dsn.sslkey !== undefined)) {
    throw validationFailed('tls.client_cert', 'is given and the DSN has sslcert or sslkey too: keep one');
  }
  if ((dsn.sslcert === undefined) !== (dsn.sslkey === undefined)) {
    throw invalidDsn('sslcert and sslkey go together');
  }
  const hasCa = tls.ca_cert !== undefined || (dsn.sslrootcert !== undefined && dsn.sslrootcert !== 'system');
  if (dsn.sslmode === 'verify-ca' && !hasCa) {
    throw validationFailed(
      'tls.ca_cert',
      'is required by sslmode=verify-ca (the CA to verify the server with)',
    );
  }
}

/** The secrets of a postgres connection, opened from the store. */
export interface PostgresSecrets {
  password?: string;
  sslpassword?: string;
  tls: TlsMaterial;
}

/**
 * The node-postgres settings for a checked DSN, every field explicit. Nothing comes from a
 * connection string, the environment or ~/.pgpass: the password is a function, so node-postgres
 * never falls back to PGPASSWORD or a password file and hands the operator's secret to a host a
 * caller named. TLS follows libpq: `require` encrypts without verifying (unless a CA is given, then
 * it verifies the chain), `verify-ca` verifies the chain, `verify-full` the chain and the host
 * name, against the given CA or else the platform's trusted CAs.
 */
export async function pgClientConfig(
  dsn: PostgresDsn,
  secrets: PostgresSecrets,
  policy: LocalAccessPolicy,
): Promise<pg.ClientConfig> {
  const password = secrets.password ?? '';
  return {
    host: dsn.host,
    port: dsn.port,
    database: dsn.database,
    user: dsn.user,
    password: () => password,
    ssl: await tlsOptions(dsn, secrets, policy),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
  };
}

async function tlsOptions(
  dsn: PostgresDsn,
  secrets: PostgresSecrets,
  policy: LocalAccessPolicy,
): Promise<false | ConnectionOptions> {
  if (dsn.sslmode === undefined || dsn.sslmode === 'disable') return false;
  const file = (key: string, name: string | undefined) =>
    name === undefined ? undefined : readTlsFile(policy, key, name);
  const ca =
    secrets.tls.ca_cert ??
    (dsn.sslrootcert === 'system' ? undefined : await file('sslrootcert', dsn.sslrootcert));
  const options: ConnectionOptions = {
    ca,
    cert: secrets.tls.client_cert ?? (await file('sslcert', dsn.sslcert)),
    key: secrets.tls.client_key ?? (await file('sslkey', dsn.sslkey)),
    passphrase: secrets.sslpassword,
  };
  if (dsn.sslmode === 'require' && ca === undefined) return { ...options, rejectUnauthorized: false };
  if (dsn.sslmode === 'require' || dsn.sslmode === 'verify-ca') {
    return { ...options, checkServerIdentity: () => undefined };
  }
  return options;
}

/** The settings for a DSN that carries all it needs (password included, TLS material as files). */
export async function pgClientConfigOfDsn(
  dsn: string,
  policy: LocalAccessPolicy = NO_LOCAL_ACCESS,
): Promise<pg.ClientConfig> {
  const parsed = parsePostgresDsn(dsn, policy);
  return pgClientConfig(
    parsed,
    { password: parsed.password, sslpassword: parsed.sslpassword, tls: {} },
    policy,
  );
}
