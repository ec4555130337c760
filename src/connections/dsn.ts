import { validationFailed } from '../errors/app-error.js';
import type { ConnectionType } from './connection-types.js';

/** Shown in place of a stored password; sent back in a PUT, it keeps the stored one. */
export const PASSWORD_MASK = '****';

/** A DSN split into the part that may be shown and the secret. */
export interface SplitDsn {
  /** The DSN without any password. */
  publicDsn: string;
  /** The password, decoded, or undefined when the DSN has none. */
  password: string | undefined;
}

/**
 * Checks a DSN against its connection type (URL form, known scheme, host, database) and takes the
 * password out of it, whether it was in the user-info part or a `password` query option.
 */
export function splitDsn(dsn: string, type: ConnectionType): SplitDsn {
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    throw validationFailed('dsn', 'must be a URL such as postgres://user:password@host:5432/database');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!type.schemes.includes(scheme)) {
    throw validationFailed('dsn', `scheme must be ${type.schemes.map((s) => `${s}://`).join(' or ')}`);
  }
  if (url.hostname === '') throw validationFailed('dsn', 'must name a host');
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (type.requiresDatabase && (database === '' || database.includes('/'))) {
    throw validationFailed('dsn', 'must name one database in its path, e.g. postgres://host:5432/mydb');
  }
  const inQuery = url.searchParams.get('password');
  if (inQuery !== null && url.password !== '') {
    throw validationFailed('dsn', 'has a password both in the user part and in the query');
  }
  const password = inQuery ?? (url.password === '' ? undefined : decodeURIComponent(url.password));
  url.searchParams.delete('password');
  url.password = '';
  return { publicDsn: url.toString(), password };
}

/** The DSN as shown to callers: the password, if any, replaced by the mask. */
export function maskDsn(publicDsn: string, hasPassword: boolean): string {
  if (!hasPassword) return publicDsn;
  const url = new URL(publicDsn);
  url.password = PASSWORD_MASK;
  return url.toString();
}

/** The full DSN to connect with. Never log or return it. */
export function joinDsn(publicDsn: string, password: string | undefined): string {
  if (password === undefined) return publicDsn;
  const url = new URL(publicDsn);
  url.password = encodeURIComponent(password);
  return url.toString();
}
