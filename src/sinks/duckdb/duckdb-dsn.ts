import { lstat, mkdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { CheckedDsn } from '../../connections/connection-types.js';
import { hasControl, invalidDsn } from '../../connections/dsn-text.js';
import type { LocalAccessPolicy } from '../../connections/local-access.js';
import { pathIsConfined } from './duckdb-path-guard.js';
import { inAnotherProject, projectDir } from './duckdb-project-dirs.js';

/** A DuckDB DSN that passed the allow-list: a database file the operator lets connections name. */
export interface DuckdbDsn extends CheckedDsn {
  /**
   * `relative`: a file name in the project's directory under `<data dir>/duckdb/`; `absolute`: a
   * path inside the project's directory of one of `connections.duckdb_dirs` (see duckdb-project-dirs).
   */
  location: 'relative' | 'absolute';
  /** The file name (relative) or the absolute path, as the DSN names it. */
  path: string;
  password: undefined;
  sslpassword: undefined;
}

/** The directory under the data dir that relative DuckDB files live in, away from the master key and the embedded PostgreSQL. */
export const DUCKDB_SUBDIR = 'duckdb';

// Plain path characters only: no percent-encoding, quoting, globbing or URL syntax to interpret.
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;
const MAX_PATH = 1024;

/**
 * Checks a DuckDB DSN without touching the file system: `duckdb:<file>.duckdb` names a file under
 * `<data dir>/duckdb/`, `duckdb:///<absolute path>.duckdb` a file inside one of the operator's
 * `connections.duckdb_dirs`. Nothing else: no `:memory:`, host, user, password, query or fragment,
 * no `.`/`..` segment or hidden file, only letters, digits, `_`, `-` and `.` in a segment. Errors
 * name the part, never the path given. `settings` checks the path again once symlinks are resolved.
 */
export function parseDuckdbDsn(dsn: string, policy: LocalAccessPolicy): DuckdbDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  if (!/^duckdb:/i.test(dsn)) throw invalidDsn('scheme must be duckdb: (e.g. duckdb:warehouse.duckdb)');
  let rest = dsn.slice('duckdb:'.length);
  if (rest.length > MAX_PATH) throw invalidDsn(`the path must be at most ${MAX_PATH} characters`);
  if (rest.includes('?')) throw invalidDsn('must not have query parameters: a duckdb DSN takes none');
  if (rest.includes('#')) throw invalidDsn('must not have a #fragment');
  if (rest.includes('@')) throw invalidDsn('must not name a user, password or host: it names a local file');
  if (rest.includes('%')) throw invalidDsn('the path must not be percent-encoded');
  if (rest.includes('\\')) throw invalidDsn('the path must use "/" as separator');
  if (/^:?memory:?$/i.test(rest)) {
    throw invalidDsn('an in-memory database is refused: name a .duckdb file, it holds the checkpoint');
  }
  let location: DuckdbDsn['location'] = 'relative';
  if (rest.startsWith('//')) {
    // duckdb://host/... names a host: refused. duckdb:///abs names an absolute path.
    if (!rest.startsWith('///')) {
      throw invalidDsn('must not name a host: use duckdb:///absolute/path.duckdb or duckdb:file.duckdb');
    }
    rest = rest.slice(2);
    location = 'absolute';
  } else if (rest.startsWith('/')) {
    location = 'absolute';
  }
  const segments = (location === 'absolute' ? rest.slice(1) : rest).split('/');
  for (const segment of segments) {
    if (segment === '..' || segment === '.') throw invalidDsn('the path must not have "." or ".." segments');
    if (!SEGMENT.test(segment)) {
      throw invalidDsn(
        'each path segment must be 1 to 200 letters, digits, "_", "-" or "." and not start with "." or "-"',
      );
    }
  }
  const file = segments[segments.length - 1] as string;
  if (!file.endsWith('.duckdb') || file === '.duckdb') {
    throw invalidDsn('the file name must end in .duckdb');
  }
  if (location === 'relative') {
    if (segments.length > 1) {
      throw invalidDsn('a relative path is a file name alone (it lives in the data directory), with no "/"');
    }
    if (policy.dataDir === undefined) {
      throw invalidDsn('a relative path needs the service data directory, which this service has not');
    }
    return { location, path: file, publicDsn: `duckdb:${file}`, password: undefined, sslpassword: undefined };
  }
  const path = `/${segments.join('/')}`;
  if (projectDirsHolding(policy, path).length === 0) {
    throw invalidDsn(
      policy.duckdbDirs.some((dir) => within(dir, path))
        ? "an absolute path must be inside this project's directory of connections.duckdb_dirs (<dir>/<project id>/)"
        : 'an absolute path must be inside one of the directories of connections.duckdb_dirs',
    );
  }
  return { location, path, publicDsn: `duckdb://${path}`, password: undefined, sslpassword: undefined };
}

/** The project's directories of `connections.duckdb_dirs` that hold `path`, lexically. */
function projectDirsHolding(policy: LocalAccessPolicy, path: string): string[] {
  return policy.duckdbDirs
    .map((dir) => projectDir(resolve(dir), policy.projectId))
    .filter((dir) => within(dir, path) && !inAnotherProject(dir, path, policy.projectId));
}

/** Whether `path` is strictly inside `dir` (both absolute), lexically. */
function within(dir: string, path: string): boolean {
  const rel = relative(resolve(dir), resolve(path));
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/**
 * The database file of a checked DSN, with symlinks resolved: the directory it is allowed in is
 * resolved, then the file's own directory (and the file itself when it exists, a symlink
 * included), and the result must still be inside the allowed one, so that a symlink planted there
 * cannot lead the sink to write anywhere else, nor into another project's directory. A dangling
 * symlink is refused: DuckDB would create its target. The project's directory is created on first
 * use. The resolved path is then walked down from `/` without following symlinks, and must be
 * one no other user can change before DuckDB opens it (`pathIsConfined`). The error never says
 * which check failed.
 */
export async function resolveDuckdbFile(dsn: DuckdbDsn, policy: LocalAccessPolicy): Promise<string> {
  const refused = () =>
    invalidDsn(
      "names no file the service may write: after symlinks it must stay inside its allowed directory, and each directory on its path must be writable by the service's user (or root) alone",
    );
  // Each allowed directory as [the directory the operator made, the project's directory in it].
  let allowed: [string, string][];
  if (dsn.location === 'relative') {
    if (policy.dataDir === undefined) throw refused();
    const base = join(policy.dataDir, DUCKDB_SUBDIR);
    allowed = [[base, projectDir(base, policy.projectId)]];
  } else {
    allowed = policy.duckdbDirs
      .map((dir): [string, string] => [resolve(dir), projectDir(resolve(dir), policy.projectId)])
      .filter(([, dir]) => within(dir, dsn.path));
  }
  for (const [base, dir] of allowed) {
    // The base must exist already (the data dir's is the service's own): only the project's is made.
    if (dsn.location === 'absolute' && !(await isDirectory(base))) continue;
    await mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => {
      throw refused();
    });
  }
  const wanted = dsn.location === 'relative' ? join(allowed[0]?.[1] as string, dsn.path) : dsn.path;
  let resolved: string;
  try {
    const parent = await realpath(dirname(wanted));
    resolved = join(parent, basename(wanted));
    const stat = await lstat(resolved).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (stat?.isSymbolicLink()) resolved = await realpath(resolved);
    else if (stat && !stat.isFile()) throw refused();
  } catch {
    throw refused();
  }
  for (const [base, dir] of allowed) {
    // `<data dir>/duckdb` is the service's own: it must be a real directory, never a symlink
    // elsewhere; a project's directory is a real one in its base, never a symlink to another's.
    const realBase =
      dsn.location === 'relative' && policy.dataDir !== undefined
        ? await realpath(policy.dataDir).then(
            (data) => join(data, DUCKDB_SUBDIR),
            () => undefined,
          )
        : await realpath(base).catch(() => undefined);
    if (realBase === undefined) continue;
    const real = join(realBase, relative(base, dir));
    if (!within(real, resolved) || inAnotherProject(real, resolved, policy.projectId)) continue;
    // Resolved, the path must also be one no other user can swap a symlink into (see the guard).
    if (pathIsConfined(resolved)) return resolved;
  }
  throw refused();
}

const isDirectory = (path: string) =>
  stat(path).then(
    (stat) => stat.isDirectory(),
    () => false,
  );

/** What a stored secret is bound to: the file. A DuckDB connection has no secret, but the contract asks. */
export function duckdbEndpointOf(dsn: string): string {
  return JSON.stringify(['duckdb', dsn]);
}
