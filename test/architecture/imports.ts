/**
 * The import graph of the project's TypeScript, read from the source text (static `import … from`,
 * `export … from` and `import('…')` with a relative specifier). Used by `layers.test.ts` and by
 * `npm run arch` to print the folder graph. Package imports are ignored: only our own edges count.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export interface ImportEdge {
  /** Importing file, relative to the root, with `/`. */
  from: string;
  /** Imported file, relative to the root, with `/` (the `.ts` it resolves to). */
  to: string;
}

const SPECIFIER = /(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm;

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'generated' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
}

/** Every relative import edge among the `.ts` files under `roots` (folders relative to `base`). */
export function importEdges(base: string, roots: string[]): ImportEdge[] {
  const files: string[] = [];
  for (const root of roots) walk(resolve(base, root), files);
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec?.startsWith('.')) continue;
      const target = resolve(dirname(file), spec).replace(/\.(m?js)$/, (_, ext: string) => (ext === 'mjs' ? '.mts' : '.ts'));
      edges.push({ from: rel(base, file), to: rel(base, target) });
    }
  }
  return edges;
}

function rel(base: string, path: string): string {
  return relative(base, path).split(sep).join('/');
}

/**
 * The folder a file belongs to for the layering rules: the first folder under its top-level root
 * (`src/graphs/contract/plan.ts` → `src/graphs`); a file directly in a root is that root's own
 * module (`src/app.ts` → `src/app`).
 */
export function folderOf(path: string): string {
  const parts = path.split('/');
  if (parts.length === 2) return `${parts[0]}/${parts[1]!.replace(/\.[^.]+$/, '')}`;
  return `${parts[0]}/${parts[1]}`;
}

/** Strongly connected components with more than one member (or a self loop) — the cycles. */
export function cycles(edges: Array<[string, string]>): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const [a, b] of edges) {
    if (!graph.has(a)) graph.set(a, new Set());
    if (!graph.has(b)) graph.set(b, new Set());
    graph.get(a)!.add(b);
  }
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)!.has(v)) out.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}
