import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { processStat } from '../../src/core/process-liveness.js';
import { claimSpoolRoot } from '../../src/runtime/spool-root.js';

const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-') || 'host';

/** A pid that certainly ran and is gone: a child that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

/** A process directory as another process would have left it, holding `bytes` bytes of spool. */
function leftBehind(spoolDir: string, name: string, bytes: number): string {
  const dir = join(spoolDir, name, 'replicator-spool-abc123');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'stream-700-1.bin'), Buffer.alloc(bytes));
  return join(spoolDir, name);
}

describe('spool root', () => {
  let spoolDir: string;

  beforeEach(() => {
    spoolDir = join(mkdtempSync(join(tmpdir(), 'spool-root-')), 'spool');
  });

  afterEach(() => {
    rmSync(join(spoolDir, '..'), { recursive: true, force: true });
  });

  it('makes an owner-only directory of its own, and removes it on release', () => {
    const root = claimSpoolRoot(spoolDir);
    expect(root.freed).toEqual({ directories: 0, bytes: 0 });
    expect(root.path.startsWith(`${spoolDir}/${host}_${process.pid}_`)).toBe(true);
    expect(statSync(spoolDir).mode & 0o777).toBe(0o700);
    expect(statSync(root.path).mode & 0o777).toBe(0o700);
    root.release();
    root.release();
    expect(readdirSync(spoolDir)).toEqual([]);
  });

  it("removes what processes of this host that are gone left, and nothing of a live process's or another host's", () => {
    const gone = leftBehind(spoolDir, `${host}_${deadPid()}_123_0badc0de`, 3_000_000);
    // This pid, but not a directory this process holds: an earlier process given the same pid.
    const samePid = leftBehind(spoolDir, `${host}_${process.pid}_1_12345678`, 1_000);
    const parent = process.ppid;
    const live = leftBehind(
      spoolDir,
      `${host}_${parent}_${processStat(parent)?.startTime ?? '-'}_aaaaaaaa`,
      500,
    );
    // The pid of a live process, started at another time: the directory's owner is gone.
    const reused = leftBehind(spoolDir, `${host}_${parent}_1_bbbbbbbb`, 700);
    const otherHost = leftBehind(spoolDir, `elsewhere.example_${deadPid()}_1_cccccccc`, 900);
    const notOurs = leftBehind(spoolDir, 'notes', 100);

    const root = claimSpoolRoot(spoolDir);
    expect(root.freed).toEqual({ directories: 3, bytes: 3_000_000 + 1_000 + 700 });
    expect([gone, samePid, reused].map(existsSync)).toEqual([false, false, false]);
    expect([live, otherHost, notOurs].map(existsSync)).toEqual([true, true, true]);

    // A second process sharing the directory leaves the first one's alone.
    const second = claimSpoolRoot(spoolDir);
    expect(second.freed).toEqual({ directories: 0, bytes: 0 });
    expect(existsSync(root.path)).toBe(true);
    second.release();
    root.release();
  });

  it('names the directory it cannot create', () => {
    const file = join(spoolDir, '..', 'a-file');
    writeFileSync(file, '');
    expect(() => claimSpoolRoot(join(file, 'spool'))).toThrow(
      `spool directory ${join(file, 'spool')} cannot be created (ENOTDIR): fix it or set spool_dir`,
    );
  });
});
