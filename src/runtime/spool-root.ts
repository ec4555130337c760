import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processAlive, processStat } from '../core/process-liveness.js';

/**
 * The spool directory of this process inside the configured `spool_dir`, named after its owner
 * (`<host>_<pid>_<start time>_<random>`), so that several processes may share `spool_dir`: a start
 * removes the directories of this host's processes that are gone (a kill -9 leaves its spool
 * files behind), never those of a live process or of another host, whose processes it cannot see.
 */
export interface SpoolRoot {
  /** This process's directory: streams make their spool files under it. */
  readonly path: string;
  /** What the start removed. */
  readonly freed: { directories: number; bytes: number };
  /** Removes this process's directory and every file in it. Safe to call twice. */
  release(): void;
}

// Directories this process holds: one naming this pid is left over unless it is held here (the pid
// of a restarted container's process is often the same).
const heldHere = new Set<string>();

const OWNER = /^(.+)_(\d+)_(\d+|-)_[0-9a-f]{8}$/;

const hostLabel = () => hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';

/**
 * Creates `spoolDir` if needed (owner-only: spooled transactions hold row data), removes what
 * processes of this host that are gone left in it, and makes this process's directory.
 * @throws Error naming the directory when it cannot be created
 */
export function claimSpoolRoot(spoolDir: string): SpoolRoot {
  try {
    mkdirSync(spoolDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`spool directory ${spoolDir} cannot be created (${code}): fix it or set spool_dir`);
  }
  const freed = removeOrphans(spoolDir);
  const start = processStat(process.pid)?.startTime ?? '-';
  const path = join(spoolDir, `${hostLabel()}_${process.pid}_${start}_${randomBytes(4).toString('hex')}`);
  mkdirSync(path, { mode: 0o700 });
  heldHere.add(path);
  return {
    path,
    freed,
    release() {
      if (!heldHere.delete(path)) return;
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** Removes the directories of this host's processes that are gone; what they held, in bytes. */
function removeOrphans(spoolDir: string): { directories: number; bytes: number } {
  const host = hostLabel();
  const freed = { directories: 0, bytes: 0 };
  for (const name of readdirSync(spoolDir)) {
    const owner = OWNER.exec(name);
    if (!owner || owner[1] !== host) continue;
    const path = join(spoolDir, name);
    const pid = Number(owner[2]);
    const alive =
      pid === process.pid
        ? heldHere.has(path)
        : processAlive(pid, owner[3] === '-' ? null : (owner[3] as string));
    if (alive) continue;
    freed.bytes += bytesUnder(path);
    rmSync(path, { recursive: true, force: true });
    freed.directories++;
  }
  return freed;
}

function bytesUnder(path: string): number {
  try {
    const stat = lstatSync(path);
    if (!stat.isDirectory()) return stat.size;
    return readdirSync(path).reduce((sum, name) => sum + bytesUnder(join(path, name)), 0);
  } catch {
    return 0; // removed meanwhile
  }
}
