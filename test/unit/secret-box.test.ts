import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMasterKey } from '../../src/secrets/master-key.js';
import { SecretBox } from '../../src/secrets/secret-box.js';

describe('secrets at rest', () => {
  it('seals and opens, differently each time', () => {
    const box = new SecretBox(randomBytes(32));
    const a = box.seal('hunter2');
    expect(a).not.toContain('hunter2');
    expect(a).not.toBe(box.seal('hunter2'));
    expect(box.open(a)).toBe('hunter2');
  });

  it('names the key in the ciphertext and refuses another key', () => {
    const sealed = new SecretBox(randomBytes(32)).seal('x');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(/sealed with master key [0-9a-f]{8}/);
  });

  it('detects tampering', () => {
    const box = new SecretBox(randomBytes(32));
    const parts = box.seal('secret value').split('.');
    const data = Buffer.from(parts[3] as string, 'base64url');
    data[0] = (data[0] as number) ^ 1;
    parts[3] = data.toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
  });

  it('generates a 0600 key in the data directory once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'key-'));
    const key = loadMasterKey(undefined, dir, true);
    expect(key).toHaveLength(32);
    expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600);
    expect(loadMasterKey(undefined, dir, true).equals(key)).toBe(true);
  });

  it('refuses a configured key file that is malformed or readable by others', () => {
    const dir = mkdtempSync(join(tmpdir(), 'key-'));
    const file = join(dir, 'k');
    writeFileSync(file, 'abc', { mode: 0o600 });
    expect(() => loadMasterKey(file, dir, false)).toThrow('auth.master_key_file: ');
    expect(() => loadMasterKey(file, dir, false)).toThrow('64 hex characters');
    writeFileSync(file, randomBytes(32).toString('hex'));
    chmodSync(file, 0o644);
    expect(() => loadMasterKey(file, dir, false)).toThrow('chmod 600');
    expect(() => loadMasterKey(join(dir, 'missing'), dir, false)).toThrow('cannot read');
  });
});
