/**
 * Summarises V8 CPU profiles (`--cpu-prof`): the functions and the files with the most self
 * time, as a share of the samples that were not idle. Usage: `tsx bench/profile-summary.ts FILE...`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const IDLE = new Set(['(idle)', '(program)', '(root)']);
const top = Number(process.env.TOP ?? 30);

for (const path of process.argv.slice(2)) {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || IDLE.has(frame.functionName)) continue;
    busy += micros;
    const file = shortFile(frame.url);
    const fn = `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
    byFile.set(file, (byFile.get(file) ?? 0) + micros);
  }
  console.log(`${path}: ${(busy / 1e6).toFixed(2)} s busy`);
  for (const [title, table] of [
    ['functions', byFunction],
    ['files', byFile],
  ] as const) {
    console.log(`\n  top ${title} by self time`);
    for (const [name, micros] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(
        `  ${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${(micros / 1e3).toFixed(0).padStart(7)} ms  ${name}`,
      );
    }
  }
}

function shortFile(url: string): string {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const src = url.search(/\/(src|bench|test)\//);
  return src >= 0 ? url.slice(src + 1) : url.replace(/^node:/, 'node:');
}
