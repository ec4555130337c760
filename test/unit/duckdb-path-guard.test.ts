import { chmod, chown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { duckdbConnectionType } from '../../src/sinks/duckdb/duckdb-connection-type.js';
import { pathIsConfined } from '../../src/sinks/duckdb/duckdb-path-guard.js';

describe('duckdb path guard: a database path no other user can redirect', () => {
  let root: string;

  beforeAll(async () => {
    // mkdtemp makes it 0700 in the sticky /tmp: a confined place.
    root = await mkdtemp(join(tmpdir(), 'duckdb-guard-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const dirOf = async (name: string, mode = 0o700) => {
    const dir = join(root, name);
    await mkdir(dir);
    await chmod(dir, mode);
    return dir;
  };

  it('takes a file, present or not, in directories only the service can write', async () => {
    const dir = await dirOf('own');
    expect(pathIsConfined(join(dir, 'a.duckdb'))).toBe(true);
    await writeFile(join(dir, 'a.duckdb'), '');
    await writeFile(join(dir, 'a.duckdb.wal'), '');
    await mkdir(join(dir, 'a.duckdb.tmp'));
    expect(pathIsConfined(join(dir, 'a.duckdb'))).toBe(true);
  });

  it('refuses a directory others may write, unless it is sticky', async () => {
    const open = await dirOf('open', 0o777);
    expect(pathIsConfined(join(open, 'a.duckdb'))).toBe(false);
    const group = await dirOf('group', 0o770);
    expect(pathIsConfined(join(group, 'a.duckdb'))).toBe(false);
    // Below it too: whoever can rename `open/inner` can put a symlink in its place.
    await mkdir(join(open, 'inner'), { mode: 0o700 });
    expect(pathIsConfined(join(open, 'inner', 'a.duckdb'))).toBe(false);
    const sticky = await dirOf('sticky', 0o1777);
    expect(pathIsConfined(join(sticky, 'a.duckdb'))).toBe(true);
  });

  it.skipIf(process.geteuid?.() !== 0)('refuses a directory another user owns', async () => {
    const theirs = await dirOf('theirs', 0o755);
    await chown(theirs, 65534, 65534);
    expect(pathIsConfined(join(theirs, 'a.duckdb'))).toBe(false);
  });

  it('refuses a symlink anywhere: a directory, the file, its WAL or its spill directory', async () => {
    const dir = await dirOf('links');
    const elsewhere = await dirOf('elsewhere');
    await symlink(elsewhere, join(dir, 'swapped'));
    expect(pathIsConfined(join(dir, 'swapped', 'a.duckdb'))).toBe(false);
    await writeFile(join(elsewhere, 'x'), '');
    await symlink(join(elsewhere, 'x'), join(dir, 'file.duckdb'));
    expect(pathIsConfined(join(dir, 'file.duckdb'))).toBe(false);
    await symlink(join(elsewhere, 'x'), join(dir, 'wal.duckdb.wal'));
    expect(pathIsConfined(join(dir, 'wal.duckdb'))).toBe(false);
    await symlink(elsewhere, join(dir, 'spill.duckdb.tmp'));
    expect(pathIsConfined(join(dir, 'spill.duckdb'))).toBe(false);
    // A WAL planted as a dangling symlink would make DuckDB create its target.
    await symlink(join(elsewhere, 'none'), join(dir, 'dangling.duckdb.wal'));
    expect(pathIsConfined(join(dir, 'dangling.duckdb'))).toBe(false);
  });

  it('is applied when a connection resolves its file', async () => {
    const allowed = await dirOf('allowed');
    const policy = { ...NO_LOCAL_ACCESS, duckdbDirs: [allowed] };
    const dsn = `duckdb://${allowed}/shop.duckdb`;
    await expect(duckdbConnectionType.settings(dsn, { tls: {} }, policy)).resolves.toBeDefined();
    await symlink(join(root, 'elsewhere', 'wal'), join(allowed, 'shop.duckdb.wal'));
    const refused = await duckdbConnectionType.settings(dsn, { tls: {} }, policy).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).message).not.toContain(allowed);
    const shared = await dirOf('shared', 0o775);
    await expect(
      duckdbConnectionType.settings(
        `duckdb://${shared}/shop.duckdb`,
        { tls: {} },
        { ...policy, duckdbDirs: [shared] },
      ),
    ).rejects.toBeInstanceOf(AppError);
  });
});
