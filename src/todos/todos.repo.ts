/**
 * The todos repository: the statements that write the work-item tables, each written once. Every
 * container (todo scopes, scenarios, Task Graph v1 graphs, metagit graphs) adds its edges here.
 * Moving the remaining writers in is tracked by test/architecture/todo-writes.test.ts (WRITERS).
 */
import type { Db } from '../db/client.js';

/** A dependency edge: `todoId` waits for `dependencyId` (docs/seeds/todo-list.md, the dependency DAG). */
export type Edge = readonly [todoId: string, dependencyId: string];

/**
 * Inserts dependency edges in one statement. The caller has checked them (same scope, no cycle)
 * and keeps `todos.unfinished_deps` of the dependents right in the same transaction. With
 * `ignoreExisting` an edge already stored is skipped; without it, a duplicate fails the statement
 * (a unique violation: the caller's bug, not the client's).
 */
export async function insertEdges(db: Db, edges: readonly Edge[], opts: { ignoreExisting?: boolean } = {}): Promise<void> {
  if (edges.length === 0) return;
  const from = edges.map((e) => e[0]);
  const to = edges.map((e) => e[1]);
  await db`insert into todo_dependencies (todo_id, dependency_id)
           select * from unnest(${from}::text[], ${to}::text[])
           ${opts.ignoreExisting ? db`on conflict do nothing` : db``}`;
}
