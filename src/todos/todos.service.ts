/**
 * The todo engine: add, read, list, edit, claim, next, transitions, assign, remove, heartbeat.
 * Rules are the todo seed's (seed 000; docs/seeds/todo-list.md §1–§9) unless noted.
 *
 * Concurrency model (READ COMMITTED, no scope-wide lock on the hot path):
 * - claim/next is one guarded `UPDATE … WHERE status='todo' AND owner IS NULL AND unfinished_deps=0`
 *   on the claimed row itself, so Postgres re-checks the whole predicate on the newest row version
 *   when two callers race: exactly one wins.
 * - `unfinished_deps` changes only by row-locked increments/decrements in the transaction that
 *   changes a dependency's done-ness (done, reopen) or an item's edges, so concurrent completions
 *   of the last two dependencies decrement 2→1→0 and exactly one of them sees 0 (one unblock).
 * - Edge writers hold `FOR SHARE` on the dependency rows they count, which conflicts with the
 *   status UPDATE of done/reopen: a count and a status change never interleave unseen.
 * - Edge writers of one scope take one advisory lock, so two concurrent inserts cannot both pass
 *   the cycle check.
 */
import { STOPPED_OR_UNKNOWN, unauthorized } from '../auth/auth.plugin.js';
import { activeSessionPrincipal } from '../auth/principals.repo.js';
import type { Principal } from '../auth/principal.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { lockXact, teamLock } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { ringAfterCommit } from '../db/doorbell.js';
import { appendEvents, emitsFor, streamKey, topicOf, type EventInput } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { ANY_TEXT, decodeCursor, encodeCursor } from '../http/cursor.js';

/** A todo item's id as `newId('td')` makes it (cursors carry it back). */
const TODO_ID = /^td-[0-9a-f]{16}$/;
import { newId } from '../lib/ids.js';
import { accessToScope, resolveScope, scopeKindOf, type TeamScope } from '../scopes/scopes.js';
import { batchedDone, batchedNext, claimedEvent, claimUpdate, completeMany, liveSession, type NextFilters } from './todos.batch.js';
import {
  effectiveOwner,
  effectiveStatus,
  eventPayload,
  freeClaimSql,
  isFreeClaim,
  isReady,
  itemColumns,
  leaseExpiredSql,
  selfManagedScopeSql,
  selectItems,
  teamScopeOf,
  toItem,
  type StoredStatus,
  type TodoItem,
  type TodoRow,
} from './todos.view.js';
import { actorOf, type Actor } from '../auth/actor.js';
import { insertEdges, insertItems } from './todos.repo.js';

/** What every service call needs: the pool, the live configuration and the caller. */
export interface Ctx {
  sql: Sql;
  config: Config;
  principal: Principal;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const me = (ctx: Ctx) => (ctx.principal.kind === 'session' ? ctx.principal.id : null);
const lease = (ctx: Ctx) => ctx.config.todo.claimLeaseMs;

/** A title as stored: trimmed, 1..`max_title` bytes (seed 000 "Items"). Throws 422 title_required, title_too_long. */
export function checkTitle(ctx: Ctx, raw: string): string {
  const title = raw.trim();
  if (!title) fail('title_required', 'todo title must not be empty');
  const max = ctx.config.todo.maxTitle;
  if (bytes(title) > max) fail('title_too_long', `todo title is ${bytes(title)} bytes; the limit is ${max} bytes`, { limit: max });
  return title;
}

/** True when every number in `v` is finite (iteratively: results may nest 100 deep). */
function finiteJson(v: unknown): boolean {
  const stack = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x === 'number' && !Number.isFinite(x)) return false;
    if (x && typeof x === 'object') stack.push(...Object.values(x as object));
  }
  return true;
}

/**
 * A `done` result: undefined or null mean none; anything else must fit `[todo]
 * max_result` bytes, measured on its UTF-8 JSON serialisation (a string's quotes and escapes
 * count), since that is what is stored and sent in the `done` event. Nesting depth is bounded
 * before this (src/http/text.ts). Errors: 422 result_too_large, with `limit` and `size`.
 */
function checkResult(ctx: Ctx, result: unknown): unknown {
  if (result === undefined || result === null) return undefined;
  if (!finiteJson(result)) {
    // JSON.parse reads 1e400 as Infinity, which JSON (and jsonb) cannot store: refuse, never drop.
    fail('validation_failed', 'the result holds a number JSON cannot represent (e.g. 1e400); send it as a string', {
      errors: [{ path: 'body.result', message: 'numbers must be finite' }],
    });
  }
  const size = bytes(JSON.stringify(result));
  const max = ctx.config.todo.maxResult;
  if (size > max) {
    fail('result_too_large', `the result is ${size} bytes as JSON; the limit is ${max} bytes (max_result); store a reference to it instead`, {
      limit: max,
      size,
    });
  }
  return result;
}

/** A note of at most `max_note` bytes (not trimmed). Throws 422 note_too_long. */
export function checkNote(ctx: Ctx, note: string): string {
  const max = ctx.config.todo.maxNote;
  if (bytes(note) > max) fail('note_too_long', `todo note is ${bytes(note)} bytes; the limit is ${max} bytes`, { limit: max });
  return note;
}

/** Tags: trimmed, empties dropped, de-duplicated, sorted ascending (byte order). */
export function normalizeTags(tags: string[]): string[] {
  return [...new Set(tags.map((t) => t.trim()).filter(Boolean))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Dependency ids: trimmed, an empty one refused, duplicates folded into one edge, sorted. */
export function normalizeDependencies(ids: string[]): string[] {
  const out = ids.map((d) => d.trim());
  if (out.some((d) => d === '')) fail('dependency_empty', 'todo dependency id must not be empty');
  return [...new Set(out)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The events of `items` under `[todo] emit_events` (none when the scope's events are off), topic `todo:<scope>`. */
export function emitted(ctx: Ctx, scope: string, items: { event: string; row: Parameters<typeof eventPayload>[1] }[]): EventInput[] {
  if (!emitsFor(scope, ctx.config.todo.emitEvents)) return [];
  return items.map(({ event, row }) => ({ topic: topicOf(row.scope), event, subjectId: row.id, payload: eventPayload(event, row) }));
}

/** Reads an item the caller may see, or throws 404 `todo_not_found` (existence is not leaked). */
async function visibleRow(ctx: Ctx, db: Db, id: string, forUpdate = false): Promise<{ row: TodoRow; override: boolean }> {
  const rows = forUpdate
    ? await db<TodoRow[]>`select ${itemColumns(db, lease(ctx))} from todos t where t.id = ${id} for update of t`
    : await db<TodoRow[]>`select ${itemColumns(db, lease(ctx))} from todos t where t.id = ${id}`;
  const row = rows[0];
  if (!row) fail('todo_not_found', `todo "${id}" not found`);
  const a = await accessToScope(db, ctx.principal, teamScopeOf(row));
  if (!a.inScope) fail('todo_not_found', `todo "${id}" not found`);
  return { row, override: a.override };
}

/**
 * Items of a `graph:` scope are Task Graph v1 subtasks: their structure (existence, edges,
 * assignment, text) and their state (done, block, reopen) belong to the graph contract and its
 * routes, so the generic todo routes refuse to change them (409 `managed_by_graph`); they still
 * read and stream them, and the lease heartbeat works on both.
 */
export function assertNotGraphManaged(scope: string): void {
  if (scope.startsWith('graph:')) {
    fail('managed_by_graph', `items of ${scope} are Task Graph v1 subtasks; change them through /v1/graphs`);
  }
  if (scope.startsWith('metagit:')) {
    fail('managed_by_graph', `items of ${scope} are metagit task nodes; change them through /v1/task-graphs`);
  }
}

// ---------------------------------------------------------------------------------------------
// Dependencies

/**
 * Validates a dependency set for item `id` in `scope` and returns the dependency rows' statuses,
 * holding `FOR SHARE` on them until commit. Checks run per dependency in sorted order: self edge,
 * unknown id, different scope, cycle (seed 000 "Dependencies"; docs/seeds/todo-list.md §6). Throws 422.
 */
async function lockAndCheckDependencies(ctx: Ctx, tx: Db, id: string, scope: TeamScope, deps: string[], isNew: boolean): Promise<Map<string, StoredStatus>> {
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
const depsLock = (r: { team_id: string; scope: string }) => teamLock(r.team_id, `todo-deps:${r.scope}`);

/** Replaces an existing item's edges and recomputes its unfinished-dependency count (in `tx`). */
async function replaceDependencies(ctx: Ctx, tx: Db, row: TodoRow, deps: string[]): Promise<void> {
  await lockXact(tx, depsLock(row));
  const statuses = await lockAndCheckDependencies(ctx, tx, row.id, teamScopeOf(row), deps, false);
  await tx`delete from todo_dependencies where todo_id = ${row.id} and not (dependency_id = any(${deps}::text[]))`;
  await insertEdges(
    tx,
    deps.map((d) => [row.id, d] as const),
    { ignoreExisting: true },
  );
  const unfinished = [...statuses.values()].filter((s) => s !== 'done').length;
  await tx`update todos set unfinished_deps = ${unfinished} where id = ${row.id}`;
}

/**
 * Adjusts the dependents of `dependencyId` after it became done (`delta = -1`) or stopped being
 * done (`+1`), locking them in id order. Returns the dependents whose readiness flipped: with -1,
 * stored-todo dependents that reached 0 (unblocked); with +1, unowned stored-todo dependents that
 * left 0 (dependency-blocked). Only those get a revision bump (seed: one readiness transition).
 */
async function cascade(tx: Db, dependencyId: string, delta: 1 | -1): Promise<TodoRow[]> {
  const ids = (await tx<{ id: string }[]>`select coord_cascade as id from coord_cascade(${dependencyId}, ${delta}::int)`).map((r) => r.id);
  return ids.length ? tx<TodoRow[]>`select ${itemColumns(tx, 0)} from todos t where t.id = any(${ids}::text[]) order by t.id` : [];
}

// ---------------------------------------------------------------------------------------------
// Add / read / list

export interface AddInput {
  title: string;
  note?: string;
  tags?: string[];
  parentId?: string;
  assignee?: string;
  dependsOn?: string[];
  scope?: string;
  /** Higher is claimed first by `next`; default 0. */
  priority?: number;
}

/**
 * The assignee of a new item, trimmed (`null` for none): assigning to another session than the
 * caller needs the scope's override authority or a user (seed 000 "Ownership rules"). Throws 403 forbidden.
 */
export function checkAssignee(ctx: Ctx, override: boolean, raw: string | undefined): string | null {
  const assignee = raw?.trim() || null;
  if (assignee && assignee !== me(ctx) && !override) {
    fail('forbidden', "only the scope's override authority or the human may assign an item to another session");
  }
  return assignee;
}

/**
 * The parent `parentId` (its row `parent`, undefined when missing) of a new sub-item in `scope`
 * (seed 000 "Items"), checked in this order: it exists for the caller, is top-level (one level
 * deep), shares the scope. Throws 422 parent_not_found, hierarchy_too_deep, parent_scope_mismatch.
 */
export async function assertParentFits(
  ctx: Ctx,
  db: Db,
  scope: TeamScope,
  parentId: string,
  parent: { team_id: string; scope: string; parent_id: string | null } | undefined,
): Promise<void> {
  const same = parent !== undefined && parent.team_id === scope.teamId && parent.scope === scope.scope;
  if (!parent || (!same && !(await accessToScope(db, ctx.principal, teamScopeOf(parent))).inScope)) {
    fail('parent_not_found', `parent todo "${parentId}" not found`);
  }
  if (parent.parent_id) fail('hierarchy_too_deep', `todo hierarchy is one level deep: "${parentId}" is itself a sub-item`);
  if (!same) fail('parent_scope_mismatch', "sub-item must share its parent's scope");
}

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

/** Reads one item. 404 `todo_not_found` when it does not exist or is outside the caller's scopes. */
export async function getTodo(ctx: Ctx, id: string): Promise<TodoItem> {
  return toItem((await visibleRow(ctx, ctx.sql, id)).row);
}

export interface ListInput {
  scope?: string;
  status?: StoredStatus;
  tag?: string;
  owner?: string;
  assignee?: string;
  all?: boolean;
  limit?: number;
  cursor?: string;
}

/**
 * Lists items in position order with a keyset cursor (never silently truncated: `nextCursor` is
 * set when more items exist). Filters: effective `status` (`todo` = ready only; `blocked` = manual
 * plus dependency waiting), `tag`, `owner` (`me` = the caller), `assignee`. `all=true` lists every
 * scope and is for users and orchestrator sessions only (seed: `--all`). Page size ≤ `list_limit`.
 */
export async function listTodos(ctx: Ctx, input: ListInput): Promise<{ items: TodoItem[]; nextCursor: string | null }> {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const sql = ctx.sql;
  let scopeCond;
  if (input.all) {
    const p = ctx.principal;
    if (!(p.kind === 'user' || p.systemKind === 'orchestrator')) fail('forbidden', 'all=true is restricted to the human or orchestrator');
    scopeCond = sql`t.team_id = ${p.teamId}`;
  } else {
    const access = await resolveScope(sql, ctx.principal, input.scope);
    scopeCond = sql`t.team_id = ${access.teamId} and t.scope = ${access.scope}`;
  }
  // A free claim (expired lease) lists as what it reads: `todo` or `blocked`, no owner.
  const free = freeClaimSql(sql, lease(ctx));
  const statusCond =
    input.status === undefined
      ? sql`true`
      : input.status === 'todo'
        ? sql`(t.status = 'todo' or ${free}) and t.unfinished_deps = 0`
        : input.status === 'blocked'
          ? sql`(t.status = 'blocked' or ((t.status = 'todo' or ${free}) and t.unfinished_deps > 0))`
          : input.status === 'in-progress'
            ? sql`t.status = 'in-progress' and not ${free}`
            : sql`t.status = ${input.status}`;
  const owner = input.owner === 'me' ? ctx.principal.id : input.owner;
  const after = input.cursor ? decodeCursor(input.cursor, input.all ? [ANY_TEXT, 'int', TODO_ID] : ['int', TODO_ID]) : undefined;
  const cursorCond = !after
    ? sql`true`
    : input.all
      ? sql`(t.scope, t.position, t.id) > (${after[0]}, ${after[1]}::int, ${after[2]})`
      : sql`(t.position, t.id) > (${after[0]}::int, ${after[1]})`;
  const rows = await sql<TodoRow[]>`
    select ${itemColumns(sql, lease(ctx))} from todos t
     where ${scopeCond} and ${statusCond} and ${cursorCond}
       ${input.tag !== undefined ? sql`and ${input.tag} = any(t.tags)` : sql``}
       ${owner !== undefined ? sql`and t.owner = ${owner} and not ${free}` : sql``}
       ${input.assignee !== undefined ? sql`and t.assignee = ${input.assignee}` : sql``}
     order by ${input.all ? sql`t.scope, ` : sql``}t.position, t.id
     limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    items: page.map(toItem),
    nextCursor: more && last ? encodeCursor(input.all ? [last.scope, last.position, last.id] : [last.position, last.id]) : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Claim / next

/**
 * Claims one item: the guarded compare-and-set `todo ∧ unowned ∧ every dependency done` →
 * in-progress, owned by the calling session (never a field of the request). An assigned item is
 * reserved for its assignee or the override authority. Errors: 403 claim_requires_session,
 * 403 reserved_for_assignee, 404 todo_not_found, 409 dependency_blocked (names the unfinished
 * dependencies), 409 already_claimed (the race was lost or the item is not claimable).
 */
export async function claimTodo(ctx: Ctx, id: string): Promise<TodoItem> {
  const self = me(ctx);
  if (!self) fail('claim_requires_session', 'claiming a todo requires a session identity');
  const { row, override } = await visibleRow(ctx, ctx.sql, id);
  if (row.scope.startsWith('metagit:')) assertNotGraphManaged(row.scope); // start it through /v1/task-graphs
  const emit = emitsFor(row.scope, ctx.config.todo.emitEvents);
  const claimed = await guardedClaim(ctx.sql, { id, actor: self, by: actorOf(ctx.principal), override, emit, leaseMs: lease(ctx) });
  if (claimed) {
    if (emit) ringAfterCommit(ctx.sql, [streamKey(claimed.team_id, topicOf(claimed.scope))]);
    return toItem(claimed);
  }
  // Lost, or never claimable: say which, from a fresh read.
  await refuseStoppedSession(ctx.sql, self);
  const { row: now } = await visibleRow(ctx, ctx.sql, id);
  const unowned = (now.status === 'todo' && now.owner === null) || isFreeClaim(now);
  if (unowned && now.unfinished_deps > 0) {
    throw new DomainError('dependency_blocked', `todo "${id}" is blocked by unfinished dependencies: ${now.blocked_by.join(', ')}`, {
      blockedBy: now.blocked_by,
    });
  }
  if (unowned && now.assignee && now.assignee !== self && !override) {
    fail('reserved_for_assignee', `todo "${id}" is reserved for its assignee ${now.assignee}`, { assignee: now.assignee });
  }
  void row;
  const status = effectiveStatus(now.status, now.unfinished_deps, isFreeClaim(now));
  const owner = effectiveOwner(now);
  throw new DomainError('already_claimed', `Item ${id} is not eligible to claim (status ${status}${owner ? `, owner ${owner}` : ''}).`, {
    itemStatus: status,
    ...(owner ? { owner } : {}),
  });
}

/**
 * The claim, one statement (docs/architecture.md §D1: the one claim path): the guarded compare-and-set
 * `(todo ∧ unowned ∨ a free claim) ∧ every dependency done ∧ (unassigned ∨ assigned to the actor ∨
 * override)` → in-progress, owned by `actor`, while the actor's session is active
 * (`liveSession`), with its events when `emit` (`claimedEvent`: a take-over of a free claim, an
 * expired lease in a plain scope, writes `todo` with reason lease-expired, then `claimed`). Resolves with the claimed row (item columns), or undefined when
 * the guard did not hold. `db` may be a transaction (Task Graph dispatch claims under the graph
 * lock through this same statement); the caller rings the doorbell after commit. `by` is who made
 * the change, as the events record it (the dispatcher, for a dispatch's claim).
 */
export async function guardedClaim(
  db: Db,
  c: { id: string; actor: string; by: Actor; override: boolean; emit: boolean; leaseMs: number },
): Promise<TodoRow | undefined> {
  const rows = await db<TodoRow[]>`
    with ${liveSession(db, c.actor)},
    target as (select t.id, case when t.status = 'in-progress' then t.owner end as former_owner
                 from todos t where t.id = ${c.id} for update),
    ${claimUpdate(db, c.actor, c.leaseMs, db`and (t.assignee is null or t.assignee = ${c.actor} or ${c.override}) and exists (select 1 from live)`)},
    ${claimedEvent(db, c.emit, c.by)}
    select ${itemColumns(db, c.leaseMs)} from c t`;
  return rows[0];
}

/** What `next` takes (`POST /v1/todos/next`): the scope (default: the caller's) and the filters. */
export interface NextInput extends NextFilters {
  scope?: string;
}

/**
 * The filters of a `next` as the claim path takes them: tags normalised (trimmed, de-duplicated,
 * sorted, empties dropped), empty lists dropped, so equal filters share a batch.
 */
export function normalizeNextFilters(input: NextFilters): NextFilters {
  const f: NextFilters = {};
  const tags = normalizeTags(input.tags ?? []);
  const anyTags = normalizeTags(input.anyTags ?? []);
  if (tags.length) f.tags = tags;
  if (anyTags.length) f.anyTags = anyTags;
  if (input.minPriority !== undefined) f.minPriority = input.minPriority;
  if (input.assignedToMe) f.assignedToMe = true;
  return f;
}

/**
 * Claims the first eligible item of a scope (default: the caller's) in one statement, in
 * (priority desc, position, id) order (seed 000 `next`: (position, id); priority is Coord's,
 * 0 by default, so the seed's order holds unless priorities are set): ready, unowned, not
 * reserved for another assignee, admitted by the filters (`tags`: carries every one; `anyTags`:
 * at least one; `minPriority`; `assignedToMe`: reserved for the caller), skipping rows another
 * claimer holds (`FOR UPDATE SKIP LOCKED`). Returns `{claimed:false}` when nothing is eligible.
 * Concurrent calls with equal filters share one round trip and commit (group commit,
 * src/todos/todos.batch.ts). A scope kind with its own claim rule answers instead (`graph:`
 * scopes: the Task Graph's locked claim for the caller's Agent, with the dispatch record); it
 * takes no filters (422 invalid_next_filter).
 * Errors: 403 claim_requires_session, 400 no_session_context/invalid_scope, 403 forbidden,
 * 404 scope_not_found, 422 invalid_next_filter.
 */
export async function claimNext(ctx: Ctx, input: NextInput = {}): Promise<{ claimed: boolean; item?: TodoItem }> {
  const target = await nextTarget(ctx, input);
  const r = await claimNextIn(ctx, target);
  if (!r.claimed) await refuseStoppedSession(ctx.sql, target.actor);
  return r;
}

/** A `next` checked once: the caller's session, the resolved scope and the normalised filters. */
export interface NextTarget {
  actor: string;
  scope: TeamScope;
  filters: NextFilters;
}

/**
 * Checks a `next` once (session caller, scope access, filters the scope takes): what a waiting
 * `next` (todos.wait.ts) checks before it claims many times. Errors: those of `claimNext`.
 */
export async function nextTarget(ctx: Ctx, input: NextInput): Promise<NextTarget> {
  const self = me(ctx);
  if (!self) fail('claim_requires_session', 'claiming a todo requires a session identity');
  const access = await resolveScope(ctx.sql, ctx.principal, input.scope);
  const filters = normalizeNextFilters(input);
  if (scopeKindOf(access.scope)?.next && Object.keys(filters).length) {
    fail('invalid_next_filter', `${access.scope} claims follow its own contract's order; call next there without tags, anyTags, minPriority or assignedToMe`);
  }
  return { actor: self, scope: { teamId: access.teamId, scope: access.scope }, filters };
}

/**
 * One claim attempt of a checked `next` (the one claim path; a scope kind with its own claim rule
 * answers instead). `{claimed:false}` when nothing is eligible, also when the session stopped
 * (the claim statement claims nothing for a stopped session; `claimNext` then says 401).
 */
export async function claimNextIn(ctx: Ctx, target: NextTarget): Promise<{ claimed: boolean; item?: TodoItem; reason?: string }> {
  const { scope } = target.scope;
  const kind = scopeKindOf(scope);
  if (kind?.next) return (await kind.next(ctx, scope.slice(scope.indexOf(':') + 1))) as { claimed: boolean; item?: TodoItem };
  const row = await batchedNext(ctx.sql, ctx.config.groupCommitMax, {
    scope: target.scope,
    actor: target.actor,
    by: actorOf(ctx.principal),
    emit: emitsFor(scope, ctx.config.todo.emitEvents),
    leaseMs: lease(ctx),
    filters: target.filters,
  });
  return row ? { claimed: true, item: toItem(row) } : { claimed: false };
}

/**
 * 401 `unauthorized` when the session stopped after its request was authenticated (the claim
 * statement found it no longer active; see `liveSession`).
 */
export async function refuseStoppedSession(sql: Sql, self: string): Promise<void> {
  const [s] = await sql<{ status: string }[]>`select status from sessions where id = ${self}`;
  if (s?.status !== 'active') {
    throw unauthorized(STOPPED_OR_UNKNOWN);
  }
}

// ---------------------------------------------------------------------------------------------
// Transitions

type Target = 'done' | 'blocked' | 'todo';
const PRE: Record<Target, StoredStatus[]> = {
  done: ['in-progress', 'blocked'],
  blocked: ['in-progress'],
  todo: ['in-progress', 'done', 'blocked'],
};

/**
 * Moves an item along the seed's state machine: done (from in-progress or blocked; owner kept;
 * with an optional `result`), block (from in-progress; a non-empty note replaces the
 * note in the same statement), reopen (from anything but todo; owner cleared; a done item's result
 * is cleared with it, by the trigger of migrations/0014, since the item is no longer done). Who:
 * the owner, the scope's override authority, or a user. Completing cascades to dependents in the
 * same transaction; reopening a done item re-blocks its unclaimed, ready dependents. `reason`,
 * when given, is recorded in the item's event (e.g. `waiter-gone`). Errors: 404 todo_not_found, 403 forbidden, 409 lease_expired, 409 invalid_transition,
 * 422 note_too_long, 422 result_too_large.
 */
export async function transitionTodo(ctx: Ctx, id: string, to: Target, note?: string, doneResult?: unknown, reason?: string): Promise<TodoItem> {
  const newNote = to === 'blocked' && note ? checkNote(ctx, note) : null;
  const self = me(ctx);
  const leaseMs = lease(ctx);
  if (to === 'done') return completeTodo(ctx, id, self, leaseMs, checkResult(ctx, doneResult));
  const result = await withTx(ctx.sql, async (tx) => {
    // Fast path for the owner (the hot path: no scope lookup); otherwise check authority first.
    let override = false;
    let attempt = self ? await guardedTransition(tx, id, to, newNote, self, false, leaseMs) : undefined;
    if (!attempt) {
      const v = await visibleRow(ctx, tx, id);
      override = v.override;
      if (override) attempt = await guardedTransition(tx, id, to, newNote, self, true, leaseMs);
      if (!attempt) return { error: v.row, override };
    }
    const { row, oldStatus } = attempt;
    const events: { event: string; row: TodoRow }[] = [];
    let flipped: TodoRow[] = [];
    if (to === 'todo' && oldStatus === 'done') flipped = await cascade(tx, id, 1);
    const [fresh] = await selectItems(tx, leaseMs, [id]);
    const name = to === 'todo' ? (fresh.unfinished_deps > 0 ? 'dependency-blocked' : 'todo') : to;
    events.push({ event: name, row: fresh });
    for (const f of flipped) events.push({ event: 'dependency-blocked', row: f });
    const written = emitted(ctx, row.scope, events);
    if (reason && written[0]) written[0].payload = { ...written[0].payload, reason };
    await appendEvents(tx, fresh.team_id, written, actorOf(ctx.principal));
    return { item: fresh };
  });
  if ('item' in result) return toItem(result.item!);
  refuseTransition(id, to, self, result.error!, result.override);
}

/**
 * `done`, the claim cycle's second half, in one round trip: the database function `coord_done_many`
 * (migrations/0004; a lone `done` is a batch of one) applies the guarded transition, the cascade and
 * the events in one call.
 * The owner's call needs no scope lookup and shares a round trip with concurrent owners' calls
 * (group commit, src/todos/todos.batch.ts); anyone else is checked for override authority first.
 */
async function completeTodo(ctx: Ctx, id: string, self: string | null, leaseMs: number, result: unknown): Promise<TodoItem> {
  const mine = self
    ? await batchedDone(ctx.sql, ctx.config.groupCommitMax, {
        id,
        actor: self,
        by: actorOf(ctx.principal),
        leaseMs,
        emitEvents: ctx.config.todo.emitEvents,
        result,
      })
    : undefined;
  if (mine) return toItem(mine);
  const v = await visibleRow(ctx, ctx.sql, id);
  if (v.override) {
    const [theirs] = await completeMany(
      ctx.sql,
      [{ id, actor: self, by: actorOf(ctx.principal), leaseMs, emitEvents: ctx.config.todo.emitEvents, result }],
      true,
    );
    if (theirs) return toItem(theirs);
  }
  refuseTransition(id, 'done', self, v.override ? (await visibleRow(ctx, ctx.sql, id)).row : v.row, v.override);
}

/** Says why a guarded transition did not apply: lease expired, not permitted, or wrong state. */
function refuseTransition(id: string, to: Target, self: string | null, r: TodoRow, override: boolean): never {
  assertNotGraphManaged(r.scope); // their state is the graph contract's: run, complete, fail, stop, resume
  const isOwner = self !== null && r.owner === self;
  if (isOwner && r.status === 'in-progress' && r.lease_expired) {
    fail('lease_expired', `the claim lease on todo "${id}" expired at ${r.lease_expires_at?.toISOString()}; claim it again`);
  }
  if (!isOwner && !override) {
    fail('forbidden', "only the owner, the scope's override authority, or the human may transition this item");
  }
  const hint = to === 'done' && r.status === 'todo' ? ` (claim it first: coord todo claim ${id})` : '';
  throw new DomainError('invalid_transition', `todo "${id}" cannot move to "${to}" from its current state${hint}`, {
    itemStatus: effectiveStatus(r.status, r.unfinished_deps),
  });
}

/** The guarded UPDATE of a transition; the owner predicate is dropped for override callers. */
async function guardedTransition(tx: Db, id: string, to: Target, note: string | null, self: string | null, override: boolean, leaseMs: number) {
  const [r] = await tx<{ id: string; scope: string; old_status: StoredStatus }[]>`
    update todos t
       set status = ${to},
           owner = case when ${to} = 'todo' then null else t.owner end,
           note = coalesce(${note}, t.note),
           revision = t.revision + 1, updated_at = now(),
           progress_at = case when ${to} = 'blocked' then t.progress_at else null end
      from (select id, status as old_status from todos where id = ${id} for update) o
     where t.id = o.id
       and ${selfManagedScopeSql(tx)}
       and t.status = any(${PRE[to]}::text[])
       and (${override} or t.owner = ${self})
       and not (t.owner is not distinct from ${self} and t.status = 'in-progress' and ${leaseExpiredSql(tx, leaseMs)})
    returning t.id, t.scope, o.old_status`;
  return r ? { row: r, oldStatus: r.old_status } : undefined;
}

/**
 * Extends the caller's claim lease (`POST /v1/todos/{id}/heartbeat`, Coord's addition to the seed
 * for long work). Owner only; no revision bump and no event. Errors: 404, 403 forbidden,
 * 409 lease_expired, 409 invalid_transition (not in progress).
 */
export async function heartbeatTodo(ctx: Ctx, id: string): Promise<TodoItem> {
  const self = me(ctx);
  const leaseMs = lease(ctx);
  const rows = self
    ? await ctx.sql<TodoRow[]>`
        with h as (
          update todos set progress_at = now()
           where id = ${id} and owner = ${self} and status = 'in-progress'
             and not ${leaseExpiredSql(ctx.sql, leaseMs, ctx.sql`progress_at`)}
          returning *)
        select ${itemColumns(ctx.sql, leaseMs)} from h t`
    : [];
  if (rows[0]) return toItem(rows[0]);
  const { row } = await visibleRow(ctx, ctx.sql, id);
  if (row.owner !== self) fail('forbidden', 'only the owner may heartbeat its claim');
  if (row.status === 'in-progress' && row.lease_expired) fail('lease_expired', `the claim lease on todo "${id}" has expired; claim it again`);
  throw new DomainError('invalid_transition', `todo "${id}" is not in progress`, { itemStatus: effectiveStatus(row.status, row.unfinished_deps) });
}

// ---------------------------------------------------------------------------------------------
// Edit / dependencies / assign / remove

export interface EditInput {
  title?: string;
  note?: string;
  tags?: string[];
  position?: number;
  priority?: number;
  /** Absent = unchanged; `[]` clears (seed 000). */
  dependsOn?: string[];
}

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
    await tx`
      update todos set
        title = coalesce(${title ?? null}, title),
        note = case when ${note !== undefined} then ${note === '' ? null : (note ?? null)} else note end,
        tags = coalesce(${tags ?? null}::text[], tags),
        position = coalesce(${input.position ?? null}::int, position),
        priority = coalesce(${input.priority ?? null}::smallint, priority),
        revision = revision + 1, updated_at = now(),
        progress_at = case when ${isOwner} and status = 'in-progress' then now() else progress_at end
      where id = ${id}`;
    const [fresh] = await selectItems(tx, leaseMs, [id]);
    const isBlocked = fresh.status === 'todo' && fresh.unfinished_deps > 0;
    const event = !wasBlocked && isBlocked ? 'dependency-blocked' : wasBlocked && !isBlocked ? 'unblocked' : 'updated';
    await appendEvents(tx, fresh.team_id, emitted(ctx, fresh.scope, [{ event, row: fresh }]), actorOf(ctx.principal));
    return fresh;
  });
  return toItem(row);
}

/**
 * An assignee must be a session that may claim in `scope`: active, a member of
 * the scope, and not a Task Graph dispatch's own session (its token may only heartbeat). The
 * seed checks nothing; an unchecked id could reserve an item for nobody, or for another team's
 * session. A missing session and one outside the scope get the same answer, so existence does
 * not leak. (A session stopped later keeps its reservations, as the seed keeps assignments.)
 * Errors: 422 invalid_assignee.
 */
export async function assertAssignable(tx: Db, scope: TeamScope, assignee: string): Promise<void> {
  const who = await activeSessionPrincipal(tx, assignee);
  if (who && who.graphId === null && (await accessToScope(tx, who, scope)).inScope) return;
  fail(
    'invalid_assignee',
    `assignee "${assignee}" is not an active session that may claim in ${scope.scope}; assign it to one of that list's sessions (GET /v1/sessions), or leave it unassigned`,
  );
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
    await tx`update todos set assignee = ${value}, revision = revision + 1, updated_at = now() where id = ${id}`;
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
    await tx`delete from todo_dependencies where todo_id = any(${set}::text[]) or dependency_id = any(${set}::text[])`;
    await tx`delete from todos where id = any(${set}::text[])`;
    await appendEvents(tx, row.team_id, emitted(ctx, row.scope, [{ event: 'removed', row }]), actorOf(ctx.principal));
    return { removed: set };
  });
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

/**
 * Why is this item not ready? The same predicate the claim uses, spelled out for the caller:
 * stored status, owner, unfinished dependencies, manual block note, assignee reservation.
 */
export async function readiness(ctx: Ctx, id: string) {
  const { row, override } = await visibleRow(ctx, ctx.sql, id);
  const self = me(ctx);
  const reasons: { code: string; message: string; ids?: string[] }[] = [];
  const free = isFreeClaim(row);
  if (row.status !== 'todo' && !free)
    reasons.push({ code: `status_${row.status.replace('-', '_')}`, message: `stored status is ${row.status}${row.owner ? `, owned by ${row.owner}` : ''}` });
  if (row.blocked_by.length) reasons.push({ code: 'dependencies_unfinished', message: `dependencies: ${row.blocked_by.join(',')}`, ids: row.blocked_by });
  if (row.status === 'blocked' && row.note) reasons.push({ code: 'manual_block', message: row.note });
  const ready = isReady(row);
  const reservedForOther = !!row.assignee && row.assignee !== self && !override;
  if (ready && reservedForOther) reasons.push({ code: 'reserved_for_assignee', message: `reserved for ${row.assignee}` });
  if (!self) reasons.push({ code: 'claim_requires_session', message: 'the caller is not a session' });
  return { id, ready, claimable: ready && !reservedForOther && self !== null, status: effectiveStatus(row.status, row.unfinished_deps, free), reasons };
}
