import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findSourceKind } from '../../src/source/registry.js';

const SRC = join(import.meta.dirname, '../../src');
const POSTGRES_SOURCE = 'source/postgres/';

/** The one file outside the PostgreSQL source that may import it: the registry of sources. */
const ALLOWED_FILES = new Set(['source/registry.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Static imports and re-exports (`from '…'`, over several lines too) and dynamic `import('…')`.
const SPECIFIER =
  /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm;

/** The statement (an import or export over one line or several) the specifier at `index` belongs to. */
function statementAt(text: string, index: number, dynamic: boolean): string {
  const lineStart = (at: number) => text.lastIndexOf('\n', at - 1) + 1;
  let start = lineStart(index);
  if (!dynamic) {
    while (start > 0 && !/^\s*(import|export)\b/.test(text.slice(start))) start = lineStart(start - 1);
  }
  const end = text.indexOf('\n', index);
  return text
    .slice(start, end === -1 ? undefined : end)
    .replace(/\s+/g, ' ')
    .trim();
}

/** Every `file: statement` outside the PostgreSQL source that imports from it. */
function importsOfPostgresSource(): string[] {
  const found: string[] = [];
  for (const path of sourceFiles(SRC)) {
    const file = relative(SRC, path).split('\\').join('/');
    if (file.startsWith(POSTGRES_SOURCE) || ALLOWED_FILES.has(file)) continue;
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? match[3] ?? '';
      if (!specifier.includes(POSTGRES_SOURCE)) continue;
      const statement = statementAt(text, match.index, match[2] !== undefined);
      found.push(`${file}: ${statement}`);
    }
  }
  return found;
}

describe('the source boundary', () => {
  it('keeps src/source/postgres/ behind the Source contract: only the registry imports it', () => {
    expect(importsOfPostgresSource()).toEqual([]);
  });

  it('finds the PostgreSQL source by its connection type', () => {
    expect(findSourceKind('postgres')?.type).toBe('postgres');
    expect(findSourceKind('mysql')).toBeUndefined();
  });
});
