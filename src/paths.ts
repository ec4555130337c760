import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The same code runs from src/ (tests, tsx) and from dist/src/ (built), so the root is found, not assumed.
function findPackageRoot(from: string): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}

/** The folder holding package.json and migrations/. */
export const packageRoot = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
