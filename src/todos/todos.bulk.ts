/**
 * Adding many items in one request (`POST /v1/todos/bulk`): up to `list_limit` items in
 * one transaction, all or nothing, with every rule of the single add (seed 000 "Items",
 * "Dependencies"; docs/seeds/todo-list.md §1, §6, §7) and set-based writes: one statement per table,
 * whatever the number of items.
 *
 * Items of the same request name each other by `ref`, a client-chosen name unique within the
 * request: `parentRef` makes an item a sub-item of another new one, and a `dependsOn` entry is
 * either an existing item id (it starts with `td-`) or a `ref` of this request (anything else),
 * which is why a ref may not start with `td-`.
 *
 * Checks run in stages, each over the items in request order; the first refusal answers for the
 * whole request (nothing is written), naming the item (`index`, 0-based, and its `ref`) beside the
 * code a single add would give: (1) the refs (invalid_ref, duplicate_ref); (2) each item's own
 * fields in the single add's order (title, note, tags, dependency ids, assignment authority),
 * then its `parentRef` (unknown_ref, the sub-item rule among new items) and the refs among its
 * `dependsOn` (unknown_ref, dependency_self); (3) cycles among the new items; (4) what needs the
 * database: each distinct assignee (at its first item), then per item its existing parent and
 * existing dependencies.
 *
 * No scope-wide dependency lock is needed: nothing outside the request can depend on an item
 * that does not exist yet, so new edges can only close a cycle among the new items themselves,
 * which a topological sort of them finds before anything is written.
 */
import type { z } from 'zod';
import type { AddManyTodoItem, AddManyTodosBody } from './todos.schemas.js';
import type { Db } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { appendEvents } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { resolveScope, type TeamScope } from '../scopes/scopes.js';
import {
  assertAssignable,
  assertNotGraphManaged,
  assertParentFits,
  checkAssignee,
  checkNote,
  checkTitle,
  normalizeDependencies,
  normalizeTags,
} from './todos.checks.js';
import { assertDependencyFits } from './todos.dependencies.js';
import { emitted, type Ctx } from './todos.context.js';
import { selectItems, toItem, type StoredStatus, type TodoItem } from './todos.view.js';
import { actorOf } from '../auth/actor.js';
import { insertEdges, insertItems } from './todos.repo.js';

/** The prefix of every item id (`newId('td')`): a `dependsOn` entry with it names an existing item, any other a ref. */
const ID_PREFIX = 'td-';

/** One item of a bulk add: a single add's fields but `scope`, plus `ref` and `parentRef` (`AddManyTodoItem`). */
export type AddManyItem = z.output<typeof AddManyTodoItem>;

/** What a bulk add takes: the body of `POST /v1/todos/bulk` (`AddManyTodos` in todos.schemas.ts). */
export type AddManyInput = z.output<typeof AddManyTodosBody>;

export interface AddManyResult {
  /** The new items, in request order. */
  items: TodoItem[];
  /** Each ref → the id of its item. */
  refs: Record<string, string>;
}

/** An item after the request-only checks: what is written, and what the database still has to confirm. */
interface Planned {
  id: string;
  title: string;
  note: string | null;
  tags: string[];
  /** Higher is claimed first by `next`; default 0. */
  priority: number;
  assignee: string | null;
  /** An existing parent (`parentId`), or the index of the new one `parentRef` names. */
  parentId: string | null;
  parentIndex: number | null;
  /** Existing dependency ids (sorted) and new ones (item indexes). */
  existingDeps: string[];
  newDeps: number[];
}

/** A refusal thrown while checking item `index`, re-thrown naming the item (`index`, `ref`) in its problem. */
function named(err: unknown, index: number, ref: string | undefined): unknown {
  if (!(err instanceof DomainError)) return err;
  const who = `items[${index}]${ref !== undefined ? ` (ref "${ref}")` : ''}`;
  return new DomainError(err.code, `${who}: ${err.message}`, { ...err.extra, index, ...(ref !== undefined ? { ref } : {}) }, err.status, err.headers);
}

/** Runs the checks of item `index`; a refusal names the item. */
async function atItem<T>(index: number, ref: string | undefined, check: () => T | Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (err) {
    throw named(err, index, ref);
  }
}

/**
 * Adds `input.items` to one scope in one transaction (`POST /v1/todos/bulk`), all or nothing.
 * Positions follow request order after the scope's last position; each item gets its `added`
 * event (the single add's payload), in request order, in the same transaction. Returns the new
 * items in request order and the ref → id map.
 * Errors: 422 too_many_items (more than `list_limit`), and every error of a single add
 * (`addTodo`), plus 422 invalid_ref, duplicate_ref, unknown_ref, dependency_self (an item naming
 * its own ref), dependency_cycle (among the new items, `cycle` as refs), and 400
 * validation_failed (both `parentId` and `parentRef`); an item's refusal carries `index` and `ref`.
 */
export async function addManyTodos(ctx: Ctx, input: AddManyInput): Promise<AddManyResult> {
  const limit = ctx.config.todo.listLimit;
  const count = input.items.length;
  if (count > limit) {
    fail('too_many_items', `${count} items in one request; the limit is ${limit} (list_limit): send them in requests of at most ${limit} items`, {
      limit,
      count,
    });
  }
  const access = await resolveScope(ctx.sql, ctx.principal, input.scope);
  assertNotGraphManaged(access.scope);
  const scope: TeamScope = { teamId: access.teamId, scope: access.scope };
  const refs = await indexRefs(input.items);
  const planned: Planned[] = [];
  for (const [index, item] of input.items.entries()) {
    planned.push(await atItem(index, item.ref, () => planItem(ctx, access.override, scope, input.items, refs, index)));
  }
  await refuseCycles(input.items, planned);
  if (count === 0) return { items: [], refs: {} };

  const rows = await withTx(ctx.sql, async (tx) => {
    const statuses = await checkAgainstDatabase(ctx, tx, scope, input.items, planned);
    const [{ last_position }] = await tx<{ last_position: number }[]>`
      insert into scopes (team_id, scope, last_position) values (${scope.teamId}, ${scope.scope}, ${count})
      on conflict (team_id, scope) do update set last_position = scopes.last_position + ${count}
      returning last_position`;
    const first = last_position - count + 1;
    await insertItems(
      tx,
      { teamId: scope.teamId, scope: scope.scope, createdBy: ctx.principal.id },
      planned.map((p, i) => ({
        id: p.id,
        title: p.title,
        note: p.note,
        assignee: p.assignee,
        parentId: p.parentIndex !== null ? planned[p.parentIndex].id : p.parentId,
        tags: p.tags,
        priority: p.priority,
        position: first + i,
        unfinishedDeps: p.newDeps.length + p.existingDeps.filter((d) => statuses.get(d) !== 'done').length,
      })),
    );
    const from: string[] = [];
    const to: string[] = [];
    for (const p of planned) {
      for (const d of p.existingDeps) {
        from.push(p.id);
        to.push(d);
      }
      for (const j of p.newDeps) {
        from.push(p.id);
        to.push(planned[j].id);
      }
    }
    await insertEdges(
      tx,
      from.map((f, i) => [f, to[i]!] as const),
    );
    // (position, id) order is request order: the positions were handed out in it.
    const rows = await selectItems(
      tx,
      ctx.config.todo.claimLeaseMs,
      planned.map((p) => p.id),
    );
    await appendEvents(
      tx,
      scope.teamId,
      emitted(
        ctx,
        scope.scope,
        rows.map((row) => ({ event: 'added', row })),
      ),
      actorOf(ctx.principal),
    );
    return rows;
  });
  const byRef: Record<string, string> = {};
  for (const [ref, index] of refs) byRef[ref] = planned[index].id;
  return { items: rows.map(toItem), refs: byRef };
}

/** Every ref → its item's index. Refused: a ref that starts with `td-`, is empty or has surrounding whitespace (invalid_ref), a ref used twice (duplicate_ref). */
async function indexRefs(items: AddManyItem[]): Promise<Map<string, number>> {
  const refs = new Map<string, number>();
  for (const [index, { ref }] of items.entries()) {
    if (ref === undefined) continue;
    await atItem(index, ref, () => {
      if (ref === '' || ref.trim() !== ref || ref.startsWith(ID_PREFIX)) {
        fail(
          'invalid_ref',
          `ref "${ref}" is not usable: a ref is non-empty, has no surrounding whitespace and does not start with "${ID_PREFIX}" (that marks an existing item id)`,
        );
      }
      const first = refs.get(ref);
      if (first !== undefined) fail('duplicate_ref', `ref "${ref}" is already items[${first}]'s; refs are unique within a request`, { firstIndex: first });
    });
    refs.set(ref, index);
  }
  return refs;
}

/** The request-only checks of item `index`, in the single add's order; returns what to write. */
async function planItem(ctx: Ctx, override: boolean, scope: TeamScope, items: AddManyItem[], refs: Map<string, number>, index: number): Promise<Planned> {
  const item = items[index];
  const title = checkTitle(ctx, item.title);
  const note = item.note !== undefined && item.note !== '' ? checkNote(ctx, item.note) : null;
  const tags = normalizeTags(item.tags ?? []);
  const deps = normalizeDependencies(item.dependsOn ?? []);
  const assignee = checkAssignee(ctx, override, item.assignee);
  const parentId = item.parentId ?? null;
  let parentIndex: number | null = null;
  if (item.parentRef !== undefined) {
    if (parentId !== null) fail('validation_failed', 'pass parentId (an existing item) or parentRef (an item of this request), not both');
    const p = refs.get(item.parentRef);
    if (p === undefined) fail('unknown_ref', `parentRef "${item.parentRef}" names no item of this request`, { parentRef: item.parentRef });
    if (p === index)
      fail('invalid_ref', `parentRef "${item.parentRef}" names the item itself; an item cannot be its own parent`, { parentRef: item.parentRef });
    const parent = items[p];
    await assertParentFits(ctx, ctx.sql, scope, item.parentRef, {
      team_id: scope.teamId,
      scope: scope.scope,
      parent_id: parent.parentId ?? parent.parentRef ?? null,
    });
    parentIndex = p;
  }
  const existingDeps: string[] = [];
  const newDeps: number[] = [];
  for (const dep of deps) {
    if (dep.startsWith(ID_PREFIX)) {
      existingDeps.push(dep);
      continue;
    }
    const j = refs.get(dep);
    if (j === undefined) fail('unknown_ref', `dependency "${dep}" is neither an item id (td-…) nor a ref of this request`, { dependency: dep });
    if (j === index) fail('dependency_self', `todo "${dep}" cannot depend on itself`, { dependency: dep });
    newDeps.push(j);
  }
  return { id: newId('td'), title, note, tags, priority: item.priority ?? 0, assignee, parentId, parentIndex, existingDeps, newDeps };
}

/**
 * Refuses a dependency cycle among the new items (422 dependency_cycle, `cycle` as refs, naming
 * its first item in request order). Kahn's topological sort: what it cannot order lies on a
 * cycle or waits on one.
 */
async function refuseCycles(items: AddManyItem[], planned: Planned[]): Promise<void> {
  const waiting = planned.map((p) => p.newDeps.length);
  const dependents: number[][] = planned.map(() => []);
  planned.forEach((p, i) => p.newDeps.forEach((j) => dependents[j].push(i)));
  const queue = waiting.flatMap((w, i) => (w === 0 ? [i] : []));
  for (let at = 0; at < queue.length; at++) {
    for (const k of dependents[queue[at]]) if (--waiting[k] === 0) queue.push(k);
  }
  if (queue.length === planned.length) return;
  // Walk unfinished dependencies from the first unordered item until one repeats: that is a cycle.
  const seen = new Map<number, number>();
  const path: number[] = [];
  let at = waiting.findIndex((w) => w > 0);
  while (!seen.has(at)) {
    seen.set(at, path.length);
    path.push(at);
    at = planned[at].newDeps.find((j) => waiting[j] > 0)!;
  }
  const loop = path.slice(seen.get(at));
  const start = loop.indexOf(Math.min(...loop));
  const cycle = [...loop.slice(start), ...loop.slice(0, start)];
  const names = [...cycle, cycle[0]].map((i) => items[i].ref!);
  const head = cycle[0];
  await atItem(head, items[head].ref, () =>
    fail('dependency_cycle', `todo dependency cycle among the new items: ${names.join(' → ')}`, { dependency: names[1], cycle: names }),
  );
}

/**
 * The checks that need the database, in one read: assignees (each distinct one once, named at its
 * first item), then per item in request order its existing parent and existing dependencies,
 * holding `FOR SHARE` on every existing item named (one statement, id order) until commit, as
 * the single add does. Returns the existing dependencies' stored statuses.
 */
async function checkAgainstDatabase(ctx: Ctx, tx: Db, scope: TeamScope, items: AddManyItem[], planned: Planned[]): Promise<Map<string, StoredStatus>> {
  const assignees = new Map<string, number>();
  planned.forEach((p, i) => p.assignee && !assignees.has(p.assignee) && assignees.set(p.assignee, i));
  for (const [assignee, i] of assignees) await atItem(i, items[i].ref, () => assertAssignable(tx, scope, assignee));
  const ids = [...new Set(planned.flatMap((p) => (p.parentId !== null ? [p.parentId, ...p.existingDeps] : p.existingDeps)))];
  const rows = ids.length
    ? await tx<{ id: string; team_id: string; scope: string; parent_id: string | null; status: StoredStatus }[]>`
        select id, team_id, scope, parent_id, status from todos where id = any(${ids}::text[]) order by id for share`
    : [];
  const found = new Map(rows.map((r) => [r.id, r]));
  for (const [i, p] of planned.entries()) {
    await atItem(i, items[i].ref, async () => {
      if (p.parentId !== null) await assertParentFits(ctx, tx, scope, p.parentId, found.get(p.parentId));
      for (const dep of p.existingDeps) await assertDependencyFits(ctx, tx, scope, dep, found.get(dep));
    });
  }
  return new Map(rows.map((r) => [r.id, r.status]));
}
