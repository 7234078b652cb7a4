/**
 * The `graph:` scope kind (docs/architecture.md §D1–§D2): a Task Graph's subtasks are work items in scope
 * `graph:<parentTaskId>`, so the todo views (list, export, SSE topic `todo:graph:<id>`) show them.
 *
 * - The canonical scope string is `graph:<parentTaskId>`; the name after `graph:` is the id.
 * - In scope: users, the sessions of the creating session's subtree (same `rootId`), and sessions
 *   bound to an Agent the graph names (graphs.repo.ts).
 * - Override authority: users only. No session holds it in a graph scope, so the todo engine's
 *   claim/transition/assign routes cannot move a subtask behind the contract's back: the subtask
 *   rows are reserved for `agent:<implementer>` (never a session id), which the claim predicate
 *   refuses for every session without override. Dispatch belongs to the graph routes; `next` in
 *   a graph scope is the graph's fleet claim (src/graphs/execution/dispatch.ts).
 *
 * Importing this module registers the kind; `graphs.routes.ts` imports it.
 */
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/client.js';
import type { ScopeKind } from '../scopes/scopes.js';
import { isTaskId } from './contract/ids.js';
import { getTodo } from '../todos/todos.read.js';
import { nextGraphSubtask } from './execution/dispatch.js';
import { graphScope, visibleTo } from './graphs.repo.js';

/**
 * Whether `p` may read graph `id` and act in its scope (one indexed probe). Users: in scope with
 * override. Sessions: in scope when they may see the graph (graphs.repo.ts `visibleTo`: the
 * creating session's subtree, or bound to an Agent the graph names); never override. An unknown
 * graph gives no access.
 */
export async function graphAccess(db: Db, p: Principal, id: string): Promise<{ inScope: boolean; override: boolean }> {
  if (p.kind === 'user') return { inScope: true, override: true };
  if (!isTaskId(id)) return { inScope: false, override: false };
  const [row] = await db<{ ok: boolean }[]>`
    select true as ok from graphs g left join sessions cs on cs.id = g.created_by where g.id = ${id} and ${visibleTo(db, p)}`;
  return { inScope: row !== undefined, override: false };
}

/** The `graph:` scope kind; buildApp registers it (src/modules.ts `wireModules`). */
export const graphScopeKind: ScopeKind = {
  async resolve(db, teamId, name) {
    if (!isTaskId(name)) return undefined;
    const [row] = await db<{ id: string }[]>`select id from graphs where team_id = ${teamId} and id = ${name}`;
    return row ? { scope: graphScope(row.id), key: row.id } : undefined;
  },
  access: graphAccess,
  async next(ctx, key) {
    const { dispatch, reason } = await nextGraphSubtask(ctx, key);
    if (!dispatch) return { claimed: false, ...(reason ? { reason } : {}) };
    return { claimed: true, item: await getTodo(ctx, dispatch.todoId), dispatch };
  },
  // No refusal: the contract names none, so an outsider gets 404, as GET /v1/graphs/{id} answers.
};
