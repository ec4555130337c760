import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { sha256 } from '@oslojs/crypto/sha2';
import { encodeHexLowerCase } from '@oslojs/encoding';

/**
 * Encrypts secrets at rest with AES-256-GCM under the master key. The ciphertext names the key
 * it was made with (`v1.<key id>.<iv>.<data+tag>`), so a wrong key is reported as such rather
 * than as corrupt data.
 */
export class SecretBox {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('master key must be 32 bytes');
    this.keyId = encodeHexLowerCase(sha256(key)).slice(0, 8);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return ['v1', this.keyId, iv.toString('base64url'), data.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, keyId, iv, data] = sealed.split('.');
    if (version !== 'v1' || !keyId || !iv || !data) throw new Error('not a sealed secret');
    if (keyId !== this.keyId) {
      throw new Error(`secret was sealed with master key ${keyId}, but the configured key is ${this.keyId}`);
    }
    const bytes = Buffer.from(data, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString(
      'utf8',
    );
  }
}
