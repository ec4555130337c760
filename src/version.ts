import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './paths.js';

const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };

/** The server version as the API reports it: `v<major>.<minor>.<patch>`. */
export const VERSION = `v${pkg.version}`;
