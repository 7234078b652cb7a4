/**
 * The `metagit:` scope kind (docs/architecture.md §D1, §D8): a metagit task graph's nodes are work items in
 * scope `metagit:<graphId>`, so the todo views (list, export, the topic `todo:metagit:<id>`) show
 * them. In scope: users, and the sessions of the creating session's subtree. Override: users. The
 * generic todo routes read and stream the nodes but refuse to move them (`managed_by_graph`);
 * `next` in the scope starts the first ready node. buildApp registers the kind (src/modules.ts `wireModules`).
 */
import type { ScopeKind } from '../scopes/scopes.js';
import { getTodo } from '../todos/todos.read.js';
import { SLUG_ID } from './metagit.outline.js';
import { nextNode } from './metagit.nodes.js';

export const metagitScopeKind: ScopeKind = {
  async resolve(db, teamId, name) {
    if (!SLUG_ID.test(name)) return undefined;
    const [row] = await db<{ id: string }[]>`select id from metagit_graphs where team_id = ${teamId} and id = ${name}`;
    return row ? { scope: `metagit:${row.id}`, key: row.id } : undefined;
  },
  async access(db, p, key) {
    if (p.kind === 'user') return { inScope: true, override: true };
    if (p.graphId !== null || !SLUG_ID.test(key)) return { inScope: false, override: false };
    const [row] = await db<{ root_id: string | null }[]>`
      select cs.root_id from metagit_graphs g left join sessions cs on cs.id = g.created_by where g.team_id = ${p.teamId} and g.id = ${key}`;
    return { inScope: row !== undefined && row.root_id === p.rootId, override: false };
  },
  async next(ctx, key) {
    const { todoId } = await nextNode(ctx, key);
    if (!todoId) return { claimed: false };
    return { claimed: true, item: await getTodo(ctx, todoId) };
  },
};
