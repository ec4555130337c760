import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const start = (name: string) => `<!-- section:${name} -->`;
const end = (name: string) => `<!-- /section:${name} -->`;

/** The section `name` of a BENCHMARKS.md text, markers included, or '' when it has none. */
export function sectionOf(text: string, name: string): string {
  const from = text.indexOf(start(name));
  const to = text.indexOf(end(name));
  return from >= 0 && to > from ? text.slice(from, to + end(name).length) : '';
}

/** `body` between the markers of the section `name`. */
export const sectionText = (name: string, body: string) => `${start(name)}\n${body.trim()}\n${end(name)}`;

/**
 * Writes `body` as the section `name` of the file, replacing the one there or appending it:
 * benchmarks run apart (the live load) keep their figures when the others are run again.
 */
export function writeSection(path: string, name: string, body: string): void {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const section = sectionText(name, body);
  const old = sectionOf(text, name);
  // A function, so that `$` in the section is taken as it is.
  writeFileSync(path, old ? text.replace(old, () => section) : `${text.trimEnd()}\n\n${section}\n`);
}
