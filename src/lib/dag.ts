/**
 * The one cycle check and dependency ordering for in-memory graphs (Task Graph v1 documents,
 * scenario member lists). The todo engine's stored DAG checks reachability in SQL under the
 * scope's lock instead (src/todos/todos.dependencies.ts), since it never loads a whole scope.
 */
import { sortByteOrder } from './byte-order.js';

export interface DagNode {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

export type DagWalk = { order: string[]; cycle: null } | { order: null; cycle: string[] };

/**
 * Depth-first walk that visits roots in byte order of their ids (or in input order with
 * `rootOrder: 'input'`) and dependencies in byte order, so equivalent inputs give the same answer.
 * Returns every id dependencies-first, or the first cycle found as a path closed on its first node
 * (`['a', 'b', 'a']`). Dependency ids that name no node are skipped: callers report them first.
 */
export function walkDag(nodes: readonly DagNode[], opts: { rootOrder?: 'byte' | 'input' } = {}): DagWalk {
  const deps = new Map(nodes.map((n) => [n.id, sortByteOrder(n.dependsOn)]));
  const done = new Set<string>();
  const active = new Set<string>();
  const path: string[] = [];
  const order: string[] = [];
  const visit = (id: string): string[] | null => {
    if (active.has(id)) return [...path.slice(path.indexOf(id)), id];
    if (done.has(id) || !deps.has(id)) return null;
    active.add(id);
    path.push(id);
    for (const d of deps.get(id)!) {
      const cycle = visit(d);
      if (cycle) return cycle;
    }
    path.pop();
    active.delete(id);
    done.add(id);
    order.push(id);
    return null;
  };
  const roots = opts.rootOrder === 'input' ? nodes.map((n) => n.id) : sortByteOrder(deps.keys());
  for (const id of roots) {
    const cycle = visit(id);
    if (cycle) return { order: null, cycle };
  }
  return { order, cycle: null };
}

/** The first cycle of `walkDag`, or null when the graph is acyclic. */
export function findCycle(nodes: readonly DagNode[]): string[] | null {
  return walkDag(nodes).cycle;
}
