import { randomBytes } from 'node:crypto';
import { hmac } from '@oslojs/crypto/hmac';
import { SHA256 } from '@oslojs/crypto/sha2';
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from '@oslojs/encoding';

/** Prefixes that say what a secret is when it turns up in a log or a paste (and let scanners find it). */
export const TOKEN_PREFIX = 'rpl_tok_';
export const SESSION_PREFIX = 'rpl_ses_';

/** A new secret: the prefix and 160 random bits in lower-case base32. */
export function newSecret(prefix: string): string {
  return prefix + encodeBase32LowerCaseNoPadding(randomBytes(20));
}

/**
 * Hashes token and session secrets for storage: HMAC-SHA256 under a key derived from the master
 * key. A stolen database alone cannot be used to check guesses, and instances sharing the
 * database recognise each other's secrets only when they share the master key.
 */
export class SecretHasher {
  private readonly key: Uint8Array;

  constructor(masterKey: Uint8Array) {
    this.key = hmac(SHA256, masterKey, new TextEncoder().encode('replicator secret hashing v1'));
  }

  hash(secret: string): string {
    return encodeHexLowerCase(hmac(SHA256, this.key, new TextEncoder().encode(secret)));
  }
}
