/**
 * The `graph:` scope kind (design brief §1–§2): a Task Graph's subtasks are work items in scope
 * `graph:<parentTaskId>`, so the todo views (list, export, SSE topic `todo:graph:<id>`) show them.
 *
 * - The canonical scope string is `graph:<parentTaskId>`; the name after `graph:` is the id.
 * - In scope: users, and the sessions of the creating session's subtree (same `rootId`). A graph
 *   created by a user is visible to users only until execution (a later issue) binds sessions.
 * - Override authority: users only. No session holds it in a graph scope, so the todo engine's
 *   claim/transition/assign routes cannot move a subtask behind the contract's back: the subtask
 *   rows are reserved for `agent:<implementer>` (never a session id), which the claim predicate
 *   and `next` refuse for every session without override. Dispatch belongs to the graph routes.
 *
 * Importing this module registers the kind; `graphs.routes.ts` imports it.
 */
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/client.js';
import { registerScopeKind } from '../scopes/scopes.js';
import { isTaskId } from './contract/ids.js';

/** The todo scope of a graph: `graph:<parentTaskId>`. */
export const graphScope = (id: string) => `graph:${id}`;

/**
 * Whether `p` may read graph `id` and act in its scope (one indexed probe). Users: in scope with
 * override. Sessions: in scope when the graph was created by a session with the same subtree root;
 * never override. An unknown graph gives no access.
 */
export async function graphAccess(db: Db, p: Principal, id: string): Promise<{ inScope: boolean; override: boolean }> {
  if (p.kind === 'user') return { inScope: true, override: true };
  if (!isTaskId(id)) return { inScope: false, override: false };
  const [row] = await db<{ root_id: string | null }[]>`
    select s.root_id from graphs g left join sessions s on s.id = g.created_by where g.id = ${id}`;
  return { inScope: row?.root_id === p.rootId, override: false };
}

/** SQL-side visibility of graphs for a principal (alias `g`), used by the graph list. */
export function canSeeGraphs(p: Principal): { all: true } | { all: false; rootId: string } {
  return p.kind === 'user' ? { all: true } : { all: false, rootId: p.rootId };
}

registerScopeKind('graph', {
  async resolve(db, name) {
    if (!isTaskId(name)) return undefined;
    const [row] = await db<{ id: string }[]>`select id from graphs where id = ${name}`;
    return row ? { scope: graphScope(row.id), key: row.id } : undefined;
  },
  access: graphAccess,
  // No refusal: the contract names none, so an outsider gets 404, as GET /v1/graphs/{id} answers.
});
