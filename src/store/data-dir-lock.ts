import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive, processStat } from '../core/process-liveness.js';

// Names the process that runs the embedded PostgreSQL of a data directory.
const OWNER_FILE = 'postgres.lock';

/** Another live process runs the data directory's embedded PostgreSQL. */
export class DataDirInUseError extends Error {}

// Owner files this process holds: a file naming this pid is stale unless it is held here (the pid
// of a restarted container's process is often the same).
const heldHere = new Set<string>();

interface Owner {
  pid: number;
  startTime: string | null;
}

function ownerAlive(file: string, owner: Owner): boolean {
  if (owner.pid === process.pid) return heldHere.has(file);
  return processAlive(owner.pid, owner.startTime);
}

function readOwnerText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}

function parseOwner(text: string | null): Owner | null {
  try {
    const { pid, start_time } = JSON.parse(text ?? '');
    return Number.isInteger(pid) && pid > 0 ? { pid, startTime: start_time ?? null } : null;
  } catch {
    return null;
  }
}

// Moved aside first, so that a claim another process made since it was read is put back, not lost.
function removeStaleClaim(file: string, staleText: string | null): void {
  const aside = `${file}.stale.${process.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return;
  }
  try {
    if (readOwnerText(aside) !== staleText) linkSync(aside, file);
  } catch {
    // Yet another claim is in place: the next attempt reads it.
  } finally {
    rmSync(aside, { force: true });
  }
}

/**
 * Claims the data directory for this process, refusing while a live process holds it; a dead
 * one's claim is taken back. Returns the release.
 */
export function claimDataDir(root: string): () => void {
  const file = join(root, OWNER_FILE);
  const content = JSON.stringify({
    pid: process.pid,
    start_time: processStat(process.pid)?.startTime ?? null,
  });
  // Written whole, then linked: the link fails if a claim exists, and no one reads a partial one.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${content}\n`, { mode: 0o644 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(draft, file);
        heldHere.add(file);
        return () => {
          heldHere.delete(file);
          if (readOwnerText(file) === content) rmSync(file, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const text = readOwnerText(file);
      const owner = parseOwner(text);
      if (owner && ownerAlive(file, owner)) {
        throw new DataDirInUseError(
          `data directory ${root} is in use by another replicator process (pid ${owner.pid}); stop it first`,
        );
      }
      removeStaleClaim(file, text);
    }
    throw new Error(`could not claim the data directory ${root}: ${file} keeps coming back`);
  } finally {
    rmSync(draft, { force: true });
  }
}
