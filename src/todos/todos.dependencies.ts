import type { Db } from '../db/client.js';
import { lockXact, teamLock } from '../db/locks.js';
import { fail } from '../http/errors.js';
import { accessToScope, type TeamScope } from '../scopes/scopes.js';
import { itemColumns, teamScopeOf, toItem, type StoredStatus, type TodoRow } from './todos.view.js';
import { cascade, replaceEdges } from './todos.repo.js';
import { lease, visibleRow, type Ctx } from './todos.context.js';

/**
 * Validates a dependency set for item `id` in `scope` and returns the dependency rows' statuses,
 * holding `FOR SHARE` on them until commit. Checks run per dependency in sorted order: self edge,
 * unknown id, different scope, cycle (seed 000 "Dependencies"; docs/seeds/todo-list.md §6). Throws 422.
 */
export async function lockAndCheckDependencies(
  ctx: Ctx,
  tx: Db,
  id: string,
  scope: TeamScope,
  deps: string[],
  isNew: boolean,
): Promise<Map<string, StoredStatus>> {
  if (deps.length === 0) return new Map();
  const rows = await tx<{ id: string; team_id: string; scope: string; status: StoredStatus }[]>`
    select id, team_id, scope, status from todos where id = any(${deps}::text[]) order by id for share`;
  const found = new Map(rows.map((r) => [r.id, r]));
  let reaching = new Set<string>();
  if (!isNew) {
    // Everything that (transitively) depends on `id`: a new edge to any of them closes a cycle.
    const r = await tx<{ id: string }[]>`
      with recursive up(id) as (
        select todo_id from todo_dependencies where dependency_id = ${id}
        union
        select e.todo_id from todo_dependencies e join up on e.dependency_id = up.id)
      select id from up where id = any(${deps}::text[])`;
    reaching = new Set(r.map((x) => x.id));
  }
  for (const dep of deps) {
    if (dep === id) fail('dependency_self', `todo "${id}" cannot depend on itself`, { id });
    await assertDependencyFits(ctx, tx, scope, dep, found.get(dep));
    if (reaching.has(dep)) {
      const cycle = await cycleThrough(tx, id, dep);
      // The seed's message (docs/seeds/todo-list.md §6), then the whole cycle.
      fail('dependency_cycle', `todo dependency cycle: "${dep}" already depends on "${id}" (${cycle.join(' → ')})`, { id, dependency: dep, cycle });
    }
  }
  return new Map(rows.map((r) => [r.id, r.status]));
}

/**
 * An existing item `dep` (its row `d`, undefined when missing) as a dependency of an item in
 * `scope`: it exists for the caller and shares the scope (seed 000 "Dependencies"). An item in a
 * scope the caller cannot read does not exist for it (existence is not leaked).
 * Throws 422 dependency_not_found, dependency_scope_mismatch.
 */
export async function assertDependencyFits(ctx: Ctx, db: Db, scope: TeamScope, dep: string, d: { team_id: string; scope: string } | undefined): Promise<void> {
  const same = d !== undefined && d.team_id === scope.teamId && d.scope === scope.scope;
  if (!d || (!same && !(await accessToScope(db, ctx.principal, teamScopeOf(d))).inScope)) {
    fail('dependency_not_found', `dependency todo "${dep}" not found`, { dependency: dep });
  }
  if (!same) fail('dependency_scope_mismatch', `dependency todo "${dep}" is in a different scope`, { dependency: dep });
}

/**
 * The whole cycle a new edge `id → dep` would close, as `[id, dep, …, id]`: a shortest path of
 * existing dependency edges from `dep` back to `id` (only called once the cycle is known to exist).
 */
async function cycleThrough(tx: Db, id: string, dep: string): Promise<string[]> {
  const edges = await tx<{ todo_id: string; dependency_id: string }[]>`
    with recursive up(id) as (
      select todo_id from todo_dependencies where dependency_id = ${id}
      union
      select e.todo_id from todo_dependencies e join up on e.dependency_id = up.id)
    select e.todo_id, e.dependency_id from todo_dependencies e where e.todo_id in (select id from up) order by 1, 2`;
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.todo_id, [...(next.get(e.todo_id) ?? []), e.dependency_id]);
  const from = new Map<string, string>([[dep, '']]);
  const queue = [dep];
  while (queue.length && !from.has(id)) {
    const at = queue.shift() as string;
    for (const n of next.get(at) ?? [])
      if (!from.has(n)) {
        from.set(n, at);
        queue.push(n);
      }
  }
  const path = [id];
  for (let at = from.get(id); at; at = from.get(at)) path.unshift(at);
  return [id, ...path];
}

/** The advisory lock that serialises the edge writers of one list (the cycle check). */
export const depsLock = (r: { team_id: string; scope: string }) => teamLock(r.team_id, `todo-deps:${r.scope}`);

/** Replaces an existing item's edges and recomputes its unfinished-dependency count (in `tx`). */
export async function replaceDependencies(ctx: Ctx, tx: Db, row: TodoRow, deps: string[]): Promise<void> {
  await lockXact(tx, depsLock(row));
  const statuses = await lockAndCheckDependencies(ctx, tx, row.id, teamScopeOf(row), deps, false);
  await replaceEdges(tx, row.id, deps, [...statuses.values()].filter((s) => s !== 'done').length);
}

/** The dependents whose readiness flipped when `dependencyId` changed done-ness (`cascade` of the repository), as rows for their events. */
export async function cascadeRows(tx: Db, dependencyId: string, delta: 1 | -1): Promise<TodoRow[]> {
  const ids = await cascade(tx, dependencyId, delta);
  return ids.length ? tx<TodoRow[]>`select ${itemColumns(tx, 0)} from todos t where t.id = any(${ids}::text[]) order by t.id` : [];
}

/**
 * The dependencies of an item with their state and `done` results (`GET /v1/todos/{id}/dependencies`):
 * what a dependent needs from upstream, in one call. Each dependency as
 * `{id, title, status, result?}` (effective status, as the item reads), in sorted id order.
 * Dependencies share the item's scope, so whoever may read the item may read them.
 * Errors: 404 todo_not_found (also for an item outside the caller's scopes).
 */
export async function dependencyResults(
  ctx: Ctx,
  id: string,
): Promise<{ id: string; dependencies: { id: string; title: string; status: StoredStatus; result?: unknown }[] }> {
  await visibleRow(ctx, ctx.sql, id);
  const rows = await ctx.sql<TodoRow[]>`
    select ${itemColumns(ctx.sql, lease(ctx))} from todos t
     where t.id in (select e.dependency_id from todo_dependencies e where e.todo_id = ${id})
     order by t.id`;
  return {
    id,
    dependencies: rows.map((r) => {
      const item = toItem(r);
      return { id: item.id, title: item.title, status: item.status, ...(item.result !== undefined ? { result: item.result } : {}) };
    }),
  };
}
