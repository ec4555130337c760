import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../config/options.js';

const KEY_PATTERN = /^[0-9a-f]{64}$/i;
const KEY = 'auth.master_key_file';
const HOW_TO_MAKE = 'make one with: (umask 077; openssl rand -hex 32 > FILE)';

const defaultMasterKeyPath = (dataDir: string) => join(dataDir, 'master.key');

/**
 * Reads the master key (32 bytes as 64 hex characters). With no `auth.master_key_file`, the key
 * is `<dataDir>/master.key`, generated there on a first start when `mayGenerate` (authentication
 * off), so a single instance needs no set-up. With authentication on nothing is generated: the
 * key must exist, readable by its owner only, or the service refuses to start. A fleet points
 * every instance at the same key.
 */
export function loadMasterKey(
  masterKeyFile: string | undefined,
  dataDir: string,
  mayGenerate: boolean,
): Buffer {
  const path = masterKeyFile ?? defaultMasterKeyPath(dataDir);
  const generated = !masterKeyFile && mayGenerate;
  if (generated && !existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(KEY, `cannot read ${path} (${code}); ${HOW_TO_MAKE.replace('FILE', path)}`);
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    if (generated) chmodSync(path, 0o600);
    else throw new ConfigError(KEY, `${path} must not be readable by group or others: chmod 600 ${path}`);
  }
  if (!KEY_PATTERN.test(text)) {
    throw new ConfigError(
      KEY,
      `${path} must hold exactly 64 hex characters; ${HOW_TO_MAKE.replace('FILE', path)}`,
    );
  }
  return Buffer.from(text, 'hex');
}
