import { withTx } from '../db/tx.js';
import type { z } from 'zod';
import type { AddTodoBody } from './todos.schemas.js';
import { appendEvents } from '../events/events.repo.js';

import { newId } from '../lib/ids.js';
import { resolveScope } from '../scopes/scopes.js';
import { selectItems, toItem, type TodoItem } from './todos.view.js';
import { actorOf } from '../auth/actor.js';
import { insertEdges, insertItems } from './todos.repo.js';
import { lease, emitted, type Ctx } from './todos.context.js';
import {
  checkTitle,
  checkNote,
  normalizeTags,
  normalizeDependencies,
  assertNotGraphManaged,
  checkAssignee,
  assertParentFits,
  assertAssignable,
} from './todos.checks.js';
import { lockAndCheckDependencies } from './todos.dependencies.js';

/** What an add takes: the body of `POST /v1/todos` (`AddTodo` in todos.schemas.ts). */
export type AddInput = z.output<typeof AddTodoBody>;

/**
 * Adds an item (seed 000 "Items", docs/seeds/todo-list.md §1, §7). Scope: `scope` or the caller's default; a sub-item's
 * parent must exist, be top-level and share the scope (checked in that order). Assigning to
 * another session needs override authority. Returns the new item (revision 1).
 * Errors: 400 no_session_context/invalid_scope, 403 forbidden, 404 scope_not_found,
 * 422 title_*, note_too_long, parent_*, hierarchy_too_deep, dependency_*.
 */
export async function addTodo(ctx: Ctx, input: AddInput): Promise<TodoItem> {
  const title = checkTitle(ctx, input.title);
  const note = input.note !== undefined && input.note !== '' ? checkNote(ctx, input.note) : null;
  const tags = normalizeTags(input.tags ?? []);
  const deps = normalizeDependencies(input.dependsOn ?? []);
  const access = await resolveScope(ctx.sql, ctx.principal, input.scope);
  assertNotGraphManaged(access.scope);
  const assignee = checkAssignee(ctx, access.override, input.assignee);
  const id = newId('td');
  const row = await withTx(ctx.sql, async (tx) => {
    if (assignee) await assertAssignable(tx, access, assignee);
    if (input.parentId !== undefined) {
      const [parent] = await tx<{ team_id: string; scope: string; parent_id: string | null }[]>`
        select team_id, scope, parent_id from todos where id = ${input.parentId} for share`;
      await assertParentFits(ctx, tx, access, input.parentId, parent);
    }
    const statuses = await lockAndCheckDependencies(ctx, tx, id, access, deps, true);
    const unfinished = [...statuses.values()].filter((s) => s !== 'done').length;
    const [{ last_position }] = await tx<{ last_position: number }[]>`
      insert into scopes (team_id, scope, last_position) values (${access.teamId}, ${access.scope}, 1)
      on conflict (team_id, scope) do update set last_position = scopes.last_position + 1
      returning last_position`;
    await insertItems(tx, { teamId: access.teamId, scope: access.scope, createdBy: ctx.principal.id }, [
      { id, title, note, assignee, parentId: input.parentId ?? null, tags, position: last_position, unfinishedDeps: unfinished, priority: input.priority ?? 0 },
    ]);
    await insertEdges(
      tx,
      deps.map((d) => [id, d] as const),
    );
    const [row] = await selectItems(tx, lease(ctx), [id]);
    await appendEvents(tx, row.team_id, emitted(ctx, row.scope, [{ event: 'added', row }]), actorOf(ctx.principal));
    return row;
  });
  return toItem(row);
}
