import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

// The markdown a reader follows links through: the README, the documentation site and the
// repository's pages it shows. The site's build checks that each linked page exists; this also
// checks links to other files and every #anchor, as GitHub and the site both resolve them.
const DOCS = 'docs';
const files = [
  'README.md',
  'SECURITY.md',
  'RELIABILITY.md',
  'BENCHMARKS.md',
  ...readdirSync(DOCS, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.md') && !path.startsWith('.vitepress/'))
    .map((path) => join(DOCS, path)),
];

/** The lines outside fenced code blocks, where links and headings are markdown. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** A heading's text as it reads: code marks, emphasis and link targets dropped. */
const headingText = (raw: string): string => raw.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');

/** GitHub's anchor of a heading. */
const githubSlug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- ]/gu, '')
    .replace(/ /g, '-');

/** The documentation site's anchor of a heading (VitePress's slugify). */
const siteSlug = (text: string): string =>
  text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();

/** The anchors a markdown file's headings get, where GitHub and the site agree on them. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  for (const line of proseLines(readFileSync(path, 'utf8'))) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = headingText(heading);
    if (githubSlug(text) === siteSlug(text)) anchors.add(githubSlug(text));
  }
  return anchors;
}

/** Every link of a file to something in the repository: [text](target), with no scheme. */
function relativeLinks(path: string): string[] {
  const links: string[] = [];
  for (const line of proseLines(readFileSync(path, 'utf8'))) {
    for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z]+:/i.test(target as string)) links.push(target as string);
    }
  }
  return links;
}

describe('links in the README and the documentation', () => {
  it('finds the files it checks', () => {
    expect(files).toContain('docs/index.md');
    expect(files).toContain('docs/sinks/webhook.md');
  });

  it.each(files)('%s links only to files and anchors that exist', (path) => {
    for (const link of relativeLinks(path)) {
      const [file, anchor] = link.split('#') as [string, string | undefined];
      const target = file === '' ? path : normalize(join(dirname(path), file));
      expect(existsSync(target), `${link}: no file ${target}`).toBe(true);
      if (anchor === undefined) continue;
      expect(statSync(target).isFile() && target.endsWith('.md'), `${link}: an anchor in a non-page`).toBe(
        true,
      );
      expect([...anchorsOf(target)], `${link}: no heading for #${anchor} in ${target}`).toContain(anchor);
    }
  });
});
