import { lockXact } from '../db/locks.js';
import type { z } from 'zod';
import type { EditTodoBody } from './todos.schemas.js';
import { withTx } from '../db/tx.js';
import { appendEvents } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { selectItems, teamScopeOf, toItem, type TodoItem } from './todos.view.js';
import { actorOf } from '../auth/actor.js';
import { assignItem, editItem, removeItems } from './todos.repo.js';
import { me, lease, emitted, visibleRow, type Ctx } from './todos.context.js';
import { checkTitle, checkNote, normalizeTags, normalizeDependencies, assertNotGraphManaged, assertAssignable } from './todos.checks.js';
import { depsLock, replaceDependencies } from './todos.dependencies.js';

/** What an edit takes: the body of `PATCH /v1/todos/{id}` (`EditTodo` in todos.schemas.ts; `dependsOn` absent = unchanged, `[]` clears). */
export type EditInput = z.output<typeof EditTodoBody>;

/**
 * Edits fields and/or the dependency set in one transaction with one revision bump; a refused
 * edge changes nothing (not even the title). `ifMatch` is the expected revision (412 on mismatch).
 * The owner's edit counts as progress (extends its lease). Event: `updated`, or
 * `dependency-blocked` / `unblocked` when the edit flips readiness.
 */
export async function editTodo(ctx: Ctx, id: string, input: EditInput, ifMatch?: number): Promise<TodoItem> {
  const title = input.title !== undefined ? checkTitle(ctx, input.title) : undefined;
  const note = input.note !== undefined ? checkNote(ctx, input.note) : undefined;
  const tags = input.tags !== undefined ? normalizeTags(input.tags) : undefined;
  const deps = input.dependsOn !== undefined ? normalizeDependencies(input.dependsOn) : undefined;
  const leaseMs = lease(ctx);
  const self = me(ctx);
  if (title === undefined && note === undefined && tags === undefined && deps === undefined && input.position === undefined && input.priority === undefined) {
    // Nothing to change: no revision bump, no event (If-Match is still checked).
    const { row } = await visibleRow(ctx, ctx.sql, id);
    if (ifMatch !== undefined && ifMatch !== row.revision) {
      throw new DomainError('revision_mismatch', `todo "${id}" is at revision ${row.revision}, not ${ifMatch}`, { revision: row.revision });
    }
    return toItem(row);
  }
  const row = await withTx(ctx.sql, async (tx) => {
    if (deps !== undefined) {
      // Lock order for edge writers: the scope's DAG lock first, then rows (else two edits that
      // close a cycle from both ends deadlock: each holds its item and waits for the other).
      const pre = await visibleRow(ctx, tx, id);
      await lockXact(tx, depsLock(pre.row));
    }
    const { row, override } = await visibleRow(ctx, tx, id, true);
    assertNotGraphManaged(row.scope);
    const isOwner = self !== null && row.owner === self;
    if (!isOwner && !override) fail('forbidden', "only the owner, the scope's override authority, or the human may edit this item");
    if (isOwner && row.status === 'in-progress' && row.lease_expired) fail('lease_expired', `the claim lease on todo "${id}" has expired; claim it again`);
    if (ifMatch !== undefined && ifMatch !== row.revision) {
      throw new DomainError('revision_mismatch', `todo "${id}" is at revision ${row.revision}, not ${ifMatch}`, { revision: row.revision });
    }
    const wasBlocked = row.status === 'todo' && row.unfinished_deps > 0;
    if (deps !== undefined) await replaceDependencies(ctx, tx, row, deps);
    if (input.position !== undefined) {
      await tx`update scopes set last_position = greatest(last_position, ${input.position}) where team_id = ${row.team_id} and scope = ${row.scope}`;
    }
    await editItem(tx, id, { title, note: note === '' ? null : note, tags, position: input.position, priority: input.priority }, isOwner);
    const [fresh] = await selectItems(tx, leaseMs, [id]);
    const isBlocked = fresh.status === 'todo' && fresh.unfinished_deps > 0;
    const event = !wasBlocked && isBlocked ? 'dependency-blocked' : wasBlocked && !isBlocked ? 'unblocked' : 'updated';
    await appendEvents(tx, fresh.team_id, emitted(ctx, fresh.scope, [{ event, row: fresh }]), actorOf(ctx.principal));
    return fresh;
  });
  return toItem(row);
}

/**
 * Assigns (or with `null` unassigns) an item. Override authority or a user only (seed 000
 * "Ownership rules"). The assignee must be a session that may claim in the item's scope
 * (`assertAssignable`: 422 invalid_assignee).
 */
export async function assignTodo(ctx: Ctx, id: string, assignee: string | null, ifMatch?: number): Promise<TodoItem> {
  const value = assignee?.trim() || null;
  const row = await withTx(ctx.sql, async (tx) => {
    const { row, override } = await visibleRow(ctx, tx, id, true);
    assertNotGraphManaged(row.scope);
    if (!override) fail('forbidden', "only the scope's override authority or the human may assign this item");
    if (ifMatch !== undefined && ifMatch !== row.revision) {
      throw new DomainError('revision_mismatch', `todo "${id}" is at revision ${row.revision}, not ${ifMatch}`, { revision: row.revision });
    }
    if (value) await assertAssignable(tx, teamScopeOf(row), value);
    await assignItem(tx, id, value);
    const [fresh] = await selectItems(tx, lease(ctx), [id]);
    await appendEvents(tx, fresh.team_id, emitted(ctx, fresh.scope, [{ event: 'assigned', row: fresh }]), actorOf(ctx.principal));
    return fresh;
  });
  return toItem(row);
}

/**
 * Removes an item and its sub-items. Refused (409 todo_referenced, naming the first
 * dependent/dependency pair by dependent id) when an item outside that set depends on one inside
 * it (seed 000; docs/seeds/todo-list.md §8). One `removed` event, for the item, from its last state.
 */
export async function removeTodo(ctx: Ctx, id: string): Promise<{ removed: string[] }> {
  const self = me(ctx);
  return withTx(ctx.sql, async (tx) => {
    const { row, override } = await visibleRow(ctx, tx, id, true);
    assertNotGraphManaged(row.scope);
    if (!(override || (self !== null && row.owner === self))) {
      fail('forbidden', "only the owner, the scope's override authority, or the human may remove this item");
    }
    const set = (
      await tx<{ id: string }[]>`
      select id from todos where id = ${id} or parent_id = ${id} order by id for update`
    ).map((r) => r.id);
    const [ref] = await tx<{ todo_id: string; dependency_id: string }[]>`
      select todo_id, dependency_id from todo_dependencies
       where dependency_id = any(${set}::text[]) and not (todo_id = any(${set}::text[]))
       order by todo_id, dependency_id limit 1`;
    if (ref) {
      throw new DomainError('todo_referenced', `cannot remove todo "${id}": todo "${ref.todo_id}" depends on "${ref.dependency_id}"`, {
        dependent: ref.todo_id,
        dependency: ref.dependency_id,
      });
    }
    await removeItems(tx, set);
    await appendEvents(tx, row.team_id, emitted(ctx, row.scope, [{ event: 'removed', row }]), actorOf(ctx.principal));
    return { removed: set };
  });
}
