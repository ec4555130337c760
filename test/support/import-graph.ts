import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** One import of a file from another part of the tree, as written. */
export interface ImportSite {
  /** The importing file, relative to the root read. */
  file: string;
  /** The module specifier as written, e.g. `../store/pool.js`. */
  specifier: string;
}

/** Folder to folder imports of a source tree: `from` → `to` → the imports that make the edge. */
export type FolderGraph = Map<string, Map<string, ImportSite[]>>;

// Static imports and re-exports (`import … from`, `export … from`, `import '…'`) and dynamic `import('…')`.
const SPECIFIERS = [
  /\b(?:import|export)\s[^'";]*?\bfrom\s*'([^']+)'/g,
  /\bimport\s*'([^']+)'/g,
  /\bimport\(\s*'([^']+)'\s*\)/g,
];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The part of `root` a file belongs to: its top-level folder, or the file itself when it sits at the top. */
export function partOf(root: string, file: string): string {
  const parts = relative(root, file).split(sep);
  return parts.length > 1 ? `${parts[0]}/` : (parts[0] as string);
}

/**
 * Reads every `.ts` file under `root` and folds its relative imports to the parts of `root`
 * (top-level folders, and the files at the top each on its own). Type-only imports count: they
 * tie the folders' designs together as much as any other.
 */
export function folderGraph(root: string): FolderGraph {
  const top = resolve(root);
  const graph: FolderGraph = new Map();
  for (const file of tsFiles(top)) {
    const text = readFileSync(file, 'utf8');
    for (const pattern of SPECIFIERS) {
      for (const match of text.matchAll(pattern)) {
        const specifier = match[1] as string;
        if (!specifier.startsWith('.')) continue;
        const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
        if (!target.startsWith(top + sep)) continue;
        const from = partOf(top, file);
        const to = partOf(top, target);
        if (from === to) continue;
        const edges = graph.get(from) ?? new Map<string, ImportSite[]>();
        graph.set(from, edges);
        const sites = edges.get(to) ?? [];
        edges.set(to, sites);
        sites.push({ file: relative(top, file), specifier });
      }
    }
  }
  return graph;
}

/** The strongly connected parts of `graph` with more than one node: each a set of folders in a cycle. */
export function cycles(graph: FolderGraph): string[][] {
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node) as number, index.get(to) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** `graph` without the edges `allowed` names (`from` → `to`). */
export function without(graph: FolderGraph, allowed: readonly { from: string; to: string }[]): FolderGraph {
  const kept: FolderGraph = new Map();
  for (const [from, edges] of graph) {
    kept.set(
      from,
      new Map([...edges].filter(([to]) => !allowed.some((a) => a.from === from && a.to === to))),
    );
  }
  return kept;
}
