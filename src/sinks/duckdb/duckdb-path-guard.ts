import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const S_ISVTX = 0o1000;

/**
 * Whether the database file at `path` (absolute, symlinks resolved) stays where it is until
 * DuckDB is done with it. DuckDB opens the file, and later its WAL (`<file>.wal`, made again at
 * each checkpoint) and spill directory (`<file>.tmp`), by name, after resolving the path itself:
 * it cannot be handed a directory handle (it turns `/proc/self/fd/N/...` back into the name). So
 * the name must be one no one else can redirect: walking down from `/` one directory at a time
 * (each opened relative to the one before, without following a symlink), every directory must be
 * owned by root or the service's user and writable by no one else (a sticky directory, like
 * `/tmp`, excepted: others cannot rename what is not theirs), and the file, its WAL and its spill
 * directory must not be symlinks. Checked from the top down, what is checked cannot change
 * after (only its owner could), so no swap can follow the check. The service's own user, and
 * root, are trusted: they could write the file anyway.
 */
export function pathIsConfined(path: string): boolean {
  const uid = process.geteuid?.() ?? 0;
  const safe = (stat: Stats) =>
    stat.isDirectory() &&
    (stat.uid === 0 || stat.uid === uid) &&
    ((stat.mode & 0o022) === 0 || (stat.mode & S_ISVTX) !== 0);
  const viaFd = existsSync('/proc/self/fd');
  let fd = openSync('/', O_RDONLY | O_DIRECTORY);
  let dir = '/';
  try {
    if (!safe(fstatSync(fd))) return false;
    for (const part of dirname(path).split('/').filter(Boolean)) {
      dir = dir === '/' ? `/${part}` : `${dir}/${part}`;
      // Through the directory already checked, not the name: the same directory whatever happened since.
      const next = openSync(viaFd ? `/proc/self/fd/${fd}/${part}` : dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      closeSync(fd);
      fd = next;
      if (!safe(fstatSync(fd))) return false;
    }
    const file = basename(path);
    const entry = (name: string) => {
      try {
        return lstatSync(viaFd ? `/proc/self/fd/${fd}/${name}` : `${dir}/${name}`);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    };
    const db = entry(file);
    const wal = entry(`${file}.wal`);
    const spill = entry(`${file}.tmp`);
    return (
      (db === undefined || db.isFile()) &&
      (wal === undefined || wal.isFile()) &&
      (spill === undefined || spill.isDirectory())
    );
  } catch {
    // A symlink (ELOOP, ENOTDIR), a directory gone or unreadable: not a place to write.
    return false;
  } finally {
    closeSync(fd);
  }
}
