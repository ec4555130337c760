// `npm start`'s build step: compiles the service and builds the dashboard only when a source is
// newer than what dist/ holds, so that a start with nothing changed does not spend a minute
// rebuilding. `npm run build` always builds everything.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest modification time under `paths` (files, or directories walked), node_modules left out. */
function newest(paths) {
  let latest = 0;
  const visit = (path) => {
    if (!existsSync(path)) return;
    const stat = statSync(path);
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path)) if (entry !== 'node_modules') visit(join(path, entry));
    } else latest = Math.max(latest, stat.mtimeMs);
  };
  for (const path of paths) visit(path);
  return latest;
}

const builtAt = (file) => (existsSync(file) ? statSync(file).mtimeMs : -1);
const run = (command, args) => execFileSync(command, args, { stdio: 'inherit' });
const bin = (name) => join('node_modules', '.bin', name);

const service = [
  'src',
  'machines',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];
if (newest(service) > builtAt(join('dist', 'src', 'cli.js'))) {
  console.error('building the service (tsc)');
  run(bin('tsc'), ['-p', 'tsconfig.build.json']);
} else console.error('the service is built and up to date');

// The dashboard imports the API's schemas and the state machine from src/ and machines/.
const dashboard = ['ui', 'vite.config.ts', 'src', 'machines', 'package-lock.json'];
if (newest(dashboard) > builtAt(join('dist', 'ui', 'index.html'))) {
  console.error('building the dashboard (vite)');
  run(bin('vite'), ['build', '--logLevel', 'warn']);
} else console.error('the dashboard is built and up to date');
