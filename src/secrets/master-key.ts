import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../config/options.js';

const KEY_PATTERN = /^[0-9a-f]{64}$/i;

/**
 * Reads the master key (32 bytes as 64 hex characters). With no `auth.master_key_file`, a key is
 * generated once in the data directory, so a single instance needs no set-up; a fleet must point
 * every instance at the same key file.
 */
export function loadMasterKey(masterKeyFile: string | undefined, dataDir: string): Buffer {
  const path = masterKeyFile ?? join(dataDir, 'master.key');
  const key = 'auth.master_key_file';
  if (!masterKeyFile && !existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(key, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    if (!masterKeyFile) chmodSync(path, 0o600);
    else throw new ConfigError(key, `${path} must not be readable by group or others (chmod 600 it)`);
  }
  if (!KEY_PATTERN.test(text)) throw new ConfigError(key, `${path} must hold exactly 64 hex characters`);
  return Buffer.from(text, 'hex');
}
