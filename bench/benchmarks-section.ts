import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const start = (name: string) => `<!-- section:${name} -->`;
const end = (name: string) => `<!-- /section:${name} -->`;

/** The section `name` of a BENCHMARKS.md text, markers included, or '' when it has none. */
export function sectionOf(text: string, name: string): string {
  const from = text.indexOf(start(name));
  const to = text.indexOf(end(name));
  return from >= 0 && to > from ? text.slice(from, to + end(name).length) : '';
}

/**
 * Writes `body` as the section `name` of the file, replacing the one there or appending it:
 * benchmarks run apart (the live load) keep their figures when the others are run again.
 */
export function writeSection(path: string, name: string, body: string): void {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const section = `${start(name)}\n${body.trim()}\n${end(name)}`;
  const old = sectionOf(text, name);
  writeFileSync(path, old ? text.replace(old, section) : `${text.trimEnd()}\n\n${section}\n`);
}
