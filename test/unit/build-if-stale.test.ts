import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** `npm start`'s build step in a scratch tree whose compilers are stand-ins that record their calls. */
function scratch() {
  const root = mkdtempSync(join(tmpdir(), 'build-if-stale-'));
  cpSync(resolve('scripts/build-if-stale.mjs'), join(root, 'build-if-stale.mjs'));
  mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true });
  for (const tool of ['tsc', 'vite']) {
    const path = join(root, 'node_modules', '.bin', tool);
    writeFileSync(path, `#!/bin/sh\necho ${tool} >> calls.txt\n`, { mode: 0o755 });
  }
  for (const dir of ['src', 'ui', 'machines', 'dist/src', 'dist/ui'])
    mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, 'src', 'a.ts'), '');
  writeFileSync(join(root, 'ui', 'b.svelte'), '');
  /** Every call of the stand-ins so far, in order. */
  const run = () => {
    writeFileSync(join(root, 'calls.txt'), '', { flag: 'a' });
    execFileSync(process.execPath, ['build-if-stale.mjs'], { cwd: root, stdio: 'ignore' });
    return execFileSync('cat', ['calls.txt'], { cwd: root }).toString().split('\n').filter(Boolean);
  };
  const touch = (path: string, secondsAgo: number) => {
    const at = new Date(Date.now() - secondsAgo * 1000);
    writeFileSync(join(root, path), '', { flag: 'a' });
    utimesSync(join(root, path), at, at);
  };
  return { run, touch };
}

describe("npm start's build step", () => {
  it('builds what is missing or older than its sources, and nothing when all is up to date', () => {
    const { run, touch } = scratch();
    expect(run()).toEqual(['tsc', 'vite']);
    touch('src/a.ts', 100);
    touch('ui/b.svelte', 100);
    touch('dist/src/cli.js', 50);
    touch('dist/ui/index.html', 50);
    // dist/ newer than every source: nothing more was built.
    expect(run()).toEqual(['tsc', 'vite']);
    // Nothing newer than dist/: no build at all.
    touch('dist/src/cli.js', 10);
    touch('dist/ui/index.html', 10);
    const before = run().length;
    expect(run().length).toBe(before);
    touch('ui/b.svelte', 0);
    expect(run().slice(before)).toEqual(['vite']);
  });
});
