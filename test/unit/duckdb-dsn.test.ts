import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAccessPolicy, NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { duckdbConnectionType } from '../../src/sinks/duckdb/duckdb-connection-type.js';
import { parseDuckdbDsn } from '../../src/sinks/duckdb/duckdb-dsn.js';

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('INVALID_DSN');
    return error as AppError;
  }
  throw new Error('not refused');
}

async function asyncRefusal(run: () => Promise<unknown>): Promise<AppError> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('INVALID_DSN');
  return error as AppError;
}

describe('duckdb DSN allow-list', () => {
  let root: string;
  let policy: LocalAccessPolicy;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'duckdb-dsn-'));
    await mkdir(join(root, 'data'));
    await mkdir(join(root, 'allowed'));
    await mkdir(join(root, 'outside'));
    policy = { ...NO_LOCAL_ACCESS, dataDir: join(root, 'data'), duckdbDirs: [join(root, 'allowed')] };
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('takes a file name under the data directory and an absolute path inside duckdb_dirs', () => {
    expect(parseDuckdbDsn('duckdb:warehouse.duckdb', policy)).toMatchObject({
      location: 'relative',
      path: 'warehouse.duckdb',
      publicDsn: 'duckdb:warehouse.duckdb',
      password: undefined,
    });
    const absolute = `duckdb://${root}/allowed/shop.duckdb`;
    expect(parseDuckdbDsn(absolute, policy)).toMatchObject({
      location: 'absolute',
      path: `${root}/allowed/shop.duckdb`,
      publicDsn: absolute,
    });
    expect(parseDuckdbDsn(`duckdb:${root}/allowed/sub/x.duckdb`, policy).publicDsn).toBe(
      `duckdb://${root}/allowed/sub/x.duckdb`,
    );
  });

  it.each([
    ['duckdb:../key.duckdb', '".." segments'],
    [`duckdb://${'/allowed/../outside/x.duckdb'}`, '".." segments'],
    ['duckdb:a/b.duckdb', 'file name alone'],
    ['duckdb::memory:', 'in-memory'],
    ['duckdb:memory', 'in-memory'],
    ['duckdb:x.duckdb?access_mode=read_write', 'query parameters'],
    ['duckdb:x.duckdb#frag', 'fragment'],
    ['duckdb://user:secret@host/x.duckdb', 'user, password or host'],
    ['duckdb://host/x.duckdb', 'must not name a host'],
    ['duckdb:x%2e.duckdb', 'percent-encoded'],
    ['duckdb:x.db', 'end in .duckdb'],
    ['duckdb:.duckdb', 'path segment'],
    ['duckdb:.hidden.duckdb', 'path segment'],
    ['duckdb:x\u0000.duckdb', 'control character'],
    ['duckdb:x\n.duckdb', 'control character'],
    ['sqlite:x.duckdb', 'scheme'],
    ['duckdb:a b.duckdb', 'path segment'],
  ])('refuses %j naming the part, never the path', (dsn, part) => {
    const error = refusal(() => parseDuckdbDsn(dsn, policy));
    expect(error.message).toContain(part);
    expect(error.message).not.toContain('secret');
    expect(error.message).not.toContain(root);
  });

  it('refuses an absolute path outside duckdb_dirs, and every path when none is allowed', () => {
    const error = refusal(() => parseDuckdbDsn(`duckdb://${root}/outside/x.duckdb`, policy));
    expect(error.message).toContain('connections.duckdb_dirs');
    expect(error.message).not.toContain(root);
    refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed-sibling/x.duckdb`, policy));
    refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed/x.duckdb`, NO_LOCAL_ACCESS));
    // The allowed directory itself is no file.
    refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed`, policy));
  });

  it('refuses a relative path without a data directory', () => {
    const error = refusal(() => parseDuckdbDsn('duckdb:warehouse.duckdb', NO_LOCAL_ACCESS));
    expect(error.message).toContain('data directory');
  });

  it('puts relative files in <data dir>/duckdb, created on first use', async () => {
    const settings = await duckdbConnectionType.settings('duckdb:w.duckdb', { tls: {} }, policy);
    expect(settings.path).toBe(join(await realRoot(root), 'data', 'duckdb', 'w.duckdb'));
  });

  it('refuses a symlink inside an allowed directory that leads out, a dangling one, and a directory', async () => {
    await symlink(join(root, 'outside'), join(root, 'allowed', 'escape'));
    await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/escape/x.duckdb`, { tls: {} }, policy),
    );
    await writeFile(join(root, 'outside', 'real.duckdb'), '');
    await symlink(join(root, 'outside', 'real.duckdb'), join(root, 'allowed', 'link.duckdb'));
    await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/link.duckdb`, { tls: {} }, policy),
    );
    await symlink(join(root, 'outside', 'nothing.duckdb'), join(root, 'allowed', 'dangling.duckdb'));
    const error = await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/dangling.duckdb`, { tls: {} }, policy),
    );
    expect(error.message).not.toContain(root);
    await mkdir(join(root, 'allowed', 'dir.duckdb'));
    await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/dir.duckdb`, { tls: {} }, policy),
    );
    // A missing parent directory of an absolute path is not created.
    await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/missing/x.duckdb`, { tls: {} }, policy),
    );
    // A symlink to a file inside the allowed directory is fine, resolved.
    await writeFile(join(root, 'allowed', 'target.duckdb'), '');
    await symlink(join(root, 'allowed', 'target.duckdb'), join(root, 'allowed', 'alias.duckdb'));
    const settings = await duckdbConnectionType.settings(
      `duckdb://${root}/allowed/alias.duckdb`,
      { tls: {} },
      policy,
    );
    expect(settings.path).toBe(join(await realRoot(root), 'allowed', 'target.duckdb'));
  });

  it('refuses a data directory whose duckdb folder is a symlink leading out', async () => {
    const data = join(root, 'data2');
    await mkdir(data);
    await symlink(join(root, 'outside'), join(data, 'duckdb'));
    await asyncRefusal(() =>
      duckdbConnectionType.settings('duckdb:w.duckdb', { tls: {} }, { ...policy, dataDir: data }),
    );
  });

  it("keeps each project's files in its own directory, out of every other project's reach", async () => {
    const projectA = '11111111-1111-4111-8111-111111111111';
    const projectB = '22222222-2222-4222-8222-222222222222';
    const a = { ...policy, projectId: projectA };
    const b = { ...policy, projectId: projectB };
    const real = await realRoot(root);
    // The same relative name is two files.
    const fileA = (await duckdbConnectionType.settings('duckdb:shared.duckdb', { tls: {} }, a)).path;
    const fileB = (await duckdbConnectionType.settings('duckdb:shared.duckdb', { tls: {} }, b)).path;
    expect(fileA).toBe(join(real, 'data', 'duckdb', projectA, 'shared.duckdb'));
    expect(fileB).toBe(join(real, 'data', 'duckdb', projectB, 'shared.duckdb'));
    // The default project keeps <data dir>/duckdb itself, as before projects had their own.
    const legacy = (await duckdbConnectionType.settings('duckdb:shared.duckdb', { tls: {} }, policy)).path;
    expect(legacy).toBe(join(real, 'data', 'duckdb', 'shared.duckdb'));

    // In duckdb_dirs, a project names files only under <dir>/<its id>/, made on first use.
    const own = `duckdb://${root}/allowed/${projectB}/shop.duckdb`;
    expect(parseDuckdbDsn(own, b).path).toBe(`${root}/allowed/${projectB}/shop.duckdb`);
    expect((await duckdbConnectionType.settings(own, { tls: {} }, b)).path).toBe(
      join(real, 'allowed', projectB, 'shop.duckdb'),
    );
    expect(refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed/shop.duckdb`, b)).message).toContain(
      '<dir>/<project id>/',
    );
    refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed/${projectA}/shop.duckdb`, b));
    // The default project may not reach into a project's directory either.
    refusal(() => parseDuckdbDsn(`duckdb://${root}/allowed/${projectB}/shop.duckdb`, policy));
    expect(parseDuckdbDsn(`duckdb://${root}/allowed/shop.duckdb`, policy).path).toBe(
      `${root}/allowed/shop.duckdb`,
    );
    // Nor through a symlink planted in its own directory.
    await symlink(join(root, 'allowed', projectB, 'shop.duckdb'), join(root, 'allowed', 'to-b.duckdb'));
    await writeFile(join(root, 'allowed', projectB, 'shop.duckdb'), '');
    await asyncRefusal(() =>
      duckdbConnectionType.settings(`duckdb://${root}/allowed/to-b.duckdb`, { tls: {} }, policy),
    );
    // A project's directory that is a symlink to another's is refused.
    await symlink(
      join(root, 'data', 'duckdb', projectA),
      join(root, 'data', 'duckdb', '33333333-3333-4333-8333-333333333333'),
    );
    await asyncRefusal(() =>
      duckdbConnectionType.settings(
        'duckdb:shared.duckdb',
        { tls: {} },
        {
          ...policy,
          projectId: '33333333-3333-4333-8333-333333333333',
        },
      ),
    );
  });

  it('refuses TLS material and a password', () => {
    const dsn = parseDuckdbDsn('duckdb:w.duckdb', policy);
    expect(() => duckdbConnectionType.checkTls(dsn, { tls: { ca_cert: 'x' } })).toThrow(/tls.ca_cert/);
    expect(() => duckdbConnectionType.checkTls(dsn, { password: 'p', tls: {} })).toThrow(/password/);
    expect(() => duckdbConnectionType.checkTls(dsn, { tls: {} })).not.toThrow();
  });
});

async function realRoot(root: string): Promise<string> {
  const { realpath } = await import('node:fs/promises');
  return realpath(root);
}
