import type { ConnectionSecrets } from './connection-secrets.js';
import type { LocalAccessPolicy } from './local-access.js';
import type { ReachCheck } from './reach-check.js';

/** A DSN that passed its type's checks. */
export interface CheckedDsn {
  /** The DSN without its secrets: what is stored in clear, and shown with `****` for them. */
  publicDsn: string;
  /** The password the DSN carried (in its user part or, for postgres, as a parameter). */
  password: string | undefined;
  /** The passphrase of an encrypted client key (postgres' `sslpassword`). */
  sslpassword: string | undefined;
}

/**
 * What the service knows about one kind of connection: how its DSN is checked, what a stored
 * secret is bound to, and the settings the data plane connects with. A sink or source of that
 * type receives those settings as its `Connection`. Every connection type is registered, beside
 * its sink kind, in `src/sinks/registry.ts`.
 */
export interface ConnectionType<Settings = unknown, Dsn extends CheckedDsn = CheckedDsn> {
  /** The `type` value of the API. */
  type: string;
  /** Whether a pipeline may read from it, write to it, or both. */
  roles: readonly ('source' | 'sink')[];
  /**
   * Checks a DSN against the type's allow-list, without touching the network or the file
   * system: a 422 INVALID_DSN naming the part, never echoing a value.
   */
  checkDsn(dsn: string, policy: LocalAccessPolicy): Dsn;
  /**
   * What a stored secret is bound to (host, port, database, user), read leniently from a stored
   * public DSN: an update keeps a masked secret only for the same endpoint.
   */
  endpointOf(publicDsn: string): string;
  /**
   * What the DSN's TLS promises (encryption, verification, the trust anchor it names), read
   * leniently from a stored public DSN: an update that drops any of them does not keep a masked
   * secret.
   */
  tlsGuarantees(publicDsn: string): string[];
  /** Refuses (422) TLS material that does not fit the DSN; a type without TLS material refuses any. */
  checkTls(dsn: Dsn, secrets: ConnectionSecrets): void;
  /** The settings to connect with, secrets included; the DSN passes the allow-list again. */
  settings(publicDsn: string, secrets: ConnectionSecrets, policy: LocalAccessPolicy): Promise<Settings>;
  /**
   * Checks that its server can be reached with `settings` (the first check is always `reach`),
   * within `timeoutMs`; nothing is written. Absent for a type that can be a source: the source
   * kind checks it, as a source or as a sink.
   */
  reach?(settings: Settings, timeoutMs: number): Promise<ReachCheck[]>;
}

/** The connection types the service knows, by name: given to what serves connections, so that it knows no kind itself. */
export interface ConnectionTypeCatalog {
  find(type: string): ConnectionType | undefined;
  names(): string[];
}
