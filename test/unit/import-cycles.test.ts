import { describe, expect, it } from 'vitest';
import { cycles, type FolderGraph, folderGraph, without } from '../support/import-graph.js';

/**
 * Imports that close a cycle between parts of src/ and stay for now, each with why. Removing one
 * of these imports makes its line fail below: take the line out then.
 */
const ALLOWED: readonly { from: string; to: string; why: string }[] = [
  {
    from: 'context.ts',
    to: 'auth/',
    why: "a request's context carries the caller's role, a type auth/ defines, and auth/'s services take that context (types only, both ways)",
  },
  {
    from: 'config/',
    to: 'connections/',
    why: "the options name the local-access policy (a type), defined beside the connection checks that enforce it; it moves with the connection types into each sink kind's folder",
  },
  {
    from: 'live/',
    to: 'verify/',
    why: "the live protocol's one union names the verification view (a type), and verify/ publishes its events to the live hub",
  },
];

const graph = folderGraph('src');

/** Each cycle with the imports that make its edges, for a person to read. */
function described(g: FolderGraph, cycle: string[]): string {
  const edges = cycle.flatMap((from) =>
    cycle.flatMap((to) =>
      (g.get(from)?.get(to) ?? [])
        .slice(0, 3)
        .map((site) => `  ${from} → ${to}: ${site.file} imports ${site.specifier}`),
    ),
  );
  return [`cycle: ${cycle.join(', ')}`, ...edges].join('\n');
}

describe('imports between the parts of src/', () => {
  it('form no cycle, but for the allowed imports', () => {
    const found = cycles(without(graph, ALLOWED));
    expect(found.map((cycle) => described(graph, cycle)).join('\n\n')).toBe('');
  });

  it.each(ALLOWED)('allows $from → $to only while that import exists', ({ from, to }) => {
    expect(graph.get(from)?.get(to)?.length ?? 0).toBeGreaterThan(0);
  });

  it('are read from the source: a cycle between two folders is found', () => {
    // The reader is checked on the real tree: auth/ imports store/, and store/ must not import auth/.
    expect(graph.get('auth/')?.has('store/')).toBe(true);
    const looped: FolderGraph = new Map(graph);
    looped.set(
      'store/',
      new Map([...(graph.get('store/') ?? []), ['auth/', [{ file: 'x', specifier: 'y' }]]]),
    );
    expect(cycles(looped).some((cycle) => cycle.includes('auth/') && cycle.includes('store/'))).toBe(true);
  });
});
