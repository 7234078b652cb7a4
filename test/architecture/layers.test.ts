/**
 * The house rules of the layout (docs/architecture.md "Layers"): no import cycle between folders
 * or files of `src/`, `cli/`, `sdk/src/` and `mcp/`, and in `src/` no import from a lower layer to
 * a higher one. Read from the source text, so it runs in the unit tier without a database.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cycles, folderOf, importEdges } from './imports.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `src/` from the floor up. A folder may import its own layer's folders (without a cycle) and any
 * lower layer's; a new folder must be placed here before it can be imported.
 */
export const SRC_LAYERS: readonly (readonly string[])[] = [
  ['lib'], // pure helpers: ids, durations, byte order, the DAG
  ['config'],
  ['db'], // the schema floor: every table, the pool, transactions, locks, the doorbell
  ['http', 'metrics'], // problem+json and errors, cursors, rate limits; metrics registry
  ['auth'], // principals, actors, the principal cache, the authentication hook
  ['scopes'], // scope names, kinds and access
  ['events'], // the outbox, the hub, streams
  ['idempotency', 'tokens'],
  ['teams', 'todos'], // todos: the work-item engine (claim, readiness, leases)
  ['sessions'],
  ['graphs', 'metagit', 'scenarios', 'export', 'audit', 'attention', 'admin', 'health', 'ui', 'mcp'],
  ['sweeps'],
  ['modules'],
  ['app'],
  ['server'],
];

const edges = importEdges(ROOT, ['src', 'cli', 'sdk/src', 'mcp']);

describe('the import graph', () => {
  it('has no cycle between folders', () => {
    const folderEdges = edges.map((e) => [folderOf(e.from), folderOf(e.to)] as [string, string]).filter(([a, b]) => a !== b);
    expect(cycles(folderEdges)).toEqual([]);
  });

  it('has no cycle between files', () => {
    expect(cycles(edges.map((e) => [e.from, e.to]))).toEqual([]);
  });

  it('imports in src/ only go down the layers', () => {
    const layerOf = new Map<string, number>();
    SRC_LAYERS.forEach((names, i) => names.forEach((n) => layerOf.set(`src/${n}`, i)));
    const unplaced = new Set<string>();
    const upward: string[] = [];
    for (const e of edges) {
      if (!e.from.startsWith('src/') || !e.to.startsWith('src/')) continue;
      const a = folderOf(e.from);
      const b = folderOf(e.to);
      if (a === b) continue;
      const la = layerOf.get(a);
      const lb = layerOf.get(b);
      if (la === undefined) unplaced.add(a);
      if (lb === undefined) unplaced.add(b);
      if (la !== undefined && lb !== undefined && lb > la) upward.push(`${e.from} -> ${e.to}`);
    }
    expect([...unplaced], 'folders missing from SRC_LAYERS').toEqual([]);
    expect(upward).toEqual([]);
  });

  it('finds cycles when there are some (the check itself works)', () => {
    expect(
      cycles([
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['c', 'd'],
      ]),
    ).toEqual([['a', 'b', 'c']]);
  });
});
