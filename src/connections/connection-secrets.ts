import { validationFailed } from '../errors/app-error.js';
import type { SecretBox } from '../secrets/secret-box.js';
import type { ConnectionRow, ConnectionWrite } from '../store/connections-store.js';
import { PASSWORD_MASK } from './dsn.js';
import { invalidDsn } from './dsn-text.js';
import { TLS_FIELDS, type TlsMaterial } from './tls-material.js';

/** Every secret a connection may hold, in clear, as the data plane needs them. */
export interface ConnectionSecrets {
  password?: string;
  sslpassword?: string;
  tls: TlsMaterial;
}

/** The secret names shown masked, in the order they are checked. */
export const SECRET_NAMES = [
  'password',
  'sslpassword',
  ...TLS_FIELDS.map((f) => `tls.${f}` as const),
] as const;
type SecretName = (typeof SECRET_NAMES)[number];

function get(secrets: ConnectionSecrets, name: SecretName): string | undefined {
  if (name === 'password' || name === 'sslpassword') return secrets[name];
  return secrets.tls[name.slice(4) as keyof TlsMaterial];
}

function set(secrets: ConnectionSecrets, name: SecretName, value: string | undefined): void {
  if (name === 'password' || name === 'sslpassword') secrets[name] = value;
  else secrets.tls[name.slice(4) as keyof TlsMaterial] = value;
}

/**
 * How secrets differ, told without comparing values: a secret given in clear counts as replaced
 * even when it equals the stored one, else a plan would answer whether a guess is right.
 */
export function secretChanges(incoming: ConnectionSecrets, stored: ConnectionSecrets) {
  const supplied = SECRET_NAMES.filter((n) => {
    const value = get(incoming, n);
    return value !== undefined && value !== PASSWORD_MASK;
  });
  const removed = SECRET_NAMES.filter((n) => get(incoming, n) === undefined && get(stored, n) !== undefined);
  return { supplied, removed };
}

/** Opens the stored secrets of a connection. */
export function openSecrets(row: ConnectionRow, box: SecretBox): ConnectionSecrets {
  const others = row.secrets_sealed === null ? {} : (JSON.parse(box.open(row.secrets_sealed)) as object);
  const secrets: ConnectionSecrets = { tls: {}, ...others };
  if (row.password_sealed !== null) secrets.password = box.open(row.password_sealed);
  return secrets;
}

/** Seals secrets for the store: the password alone as before, the others as one JSON document. */
export function sealSecrets(
  secrets: ConnectionSecrets,
  box: SecretBox,
): Pick<ConnectionWrite, 'passwordSealed' | 'secretsSealed' | 'secretNames'> {
  const { password, ...others } = secrets;
  const secretNames = SECRET_NAMES.filter((n) => n !== 'password' && get(secrets, n) !== undefined);
  return {
    passwordSealed: password === undefined ? null : box.seal(password),
    secretsSealed: secretNames.length === 0 ? null : box.seal(JSON.stringify(others)),
    secretNames,
  };
}

// A secret of the DSN is a DSN problem; TLS material is a field of its own.
const refusal = (name: SecretName, problem: string) =>
  name === 'password' || name === 'sslpassword' ? invalidDsn(problem) : validationFailed(name, problem);

/** Refuses the mask on create: there is nothing stored to keep. */
export function refuseMasks(secrets: ConnectionSecrets): void {
  for (const name of SECRET_NAMES) {
    if (get(secrets, name) === PASSWORD_MASK)
      throw refusal(name, `"${PASSWORD_MASK}" is only accepted on update`);
  }
}

/**
 * Replaces each masked secret of an update with the stored one. The stored secret is kept only
 * for the same endpoint over TLS at least as strong: otherwise anyone who may edit a connection
 * could send its password to a host of their choice by changing the host and sending the mask
 * back, or read it off the wire by turning TLS off. `notKeptBecause` says why it cannot be kept
 * (`the host, port, database or user changed`), undefined when it can.
 */
export function keepMaskedSecrets(
  incoming: ConnectionSecrets,
  stored: ConnectionSecrets,
  notKeptBecause: string | undefined,
): ConnectionSecrets {
  const result: ConnectionSecrets = { ...incoming, tls: { ...incoming.tls } };
  for (const name of SECRET_NAMES) {
    if (get(incoming, name) !== PASSWORD_MASK) continue;
    if (notKeptBecause !== undefined) {
      throw refusal(
        name,
        `${notKeptBecause}, so the stored ${name} is not kept: give it again instead of "${PASSWORD_MASK}"`,
      );
    }
    const kept = get(stored, name);
    if (kept === undefined) throw refusal(name, `there is no stored ${name} to keep`);
    set(result, name, kept);
  }
  return result;
}
