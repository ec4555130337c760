import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { validationFailed } from '../../errors/app-error.js';
import { type DuckdbDsn, duckdbEndpointOf, parseDuckdbDsn, resolveDuckdbFile } from './duckdb-dsn.js';

/** What the DuckDB sink opens: the database file, absolute, symlinks resolved, checked against the allow-list. */
export interface DuckdbSettings {
  path: string;
}

/** A local file has no TLS and no password: any given is refused rather than silently unused. */
function checkDuckdbTls(_dsn: DuckdbDsn, secrets: ConnectionSecrets): void {
  const given = Object.keys(secrets.tls).find(
    (k) => secrets.tls[k as keyof typeof secrets.tls] !== undefined,
  );
  if (given !== undefined) throw validationFailed(`tls.${given}`, 'is given but a duckdb file has no TLS');
  if (secrets.password !== undefined) {
    throw validationFailed('password', 'is given but a duckdb file has no password');
  }
}

/** DuckDB, as a sink: a database file on the service's machine, inside the directories the operator allows. */
export const duckdbConnectionType: ConnectionType<DuckdbSettings, DuckdbDsn> = {
  type: 'duckdb',
  roles: ['sink'],
  checkDsn: (dsn, policy) => parseDuckdbDsn(dsn, policy),
  endpointOf: duckdbEndpointOf,
  // A local file: nothing crosses a network.
  tlsGuarantees: () => [],
  checkTls: checkDuckdbTls,
  settings: async (publicDsn, _secrets, policy) => ({
    path: await resolveDuckdbFile(parseDuckdbDsn(publicDsn, policy), policy),
  }),
  reach: async (settings) => (await import('./reach.js')).reachDuckdb(settings),
};
