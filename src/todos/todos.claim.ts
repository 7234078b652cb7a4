/**
 * Claiming todo-list items: `claim` of one item and `next` (seed 000 "Claiming"; docs/seeds/todo-list.md).
 * The statements are the repository's (the one claim path, docs/architecture.md §D1); `next` goes
 * through group commit (todos.batch.ts).
 */
import { STOPPED_OR_UNKNOWN, unauthorized } from '../auth/auth.plugin.js';
import type { Sql } from '../db/client.js';
import { ringAfterCommit } from '../db/doorbell.js';
import { emitsFor, streamKey, topicOf } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { resolveScope, scopeKindOf, type TeamScope } from '../scopes/scopes.js';
import { batchedNext } from './todos.batch.js';
import { contractOf, effectiveOwner, effectiveStatus, isFreeClaim, toItem, type TodoItem } from './todos.view.js';
import { actorOf } from '../auth/actor.js';
import { guardedClaim, type NextFilters } from './todos.repo.js';
import { me, lease, visibleRow, type Ctx } from './todos.context.js';
import { normalizeTags, assertNotGraphManaged } from './todos.checks.js';

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
  if (contractOf(row.scope) === 'metagit') assertNotGraphManaged(row.scope); // start it through /v1/task-graphs
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
  throw new DomainError(
    'already_claimed',
    `Item ${id} is not eligible to claim (status ${status}${owner ? `, owner ${owner}` : ''}); take another ready item with next.`,
    {
      itemStatus: status,
      ...(owner ? { owner } : {}),
    },
  );
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
  return claimNextChecked(ctx, await nextTarget(ctx, input));
}

/** {@link claimNext} of a `next` already checked (`nextTarget`). */
export async function claimNextChecked(ctx: Ctx, target: NextTarget): Promise<{ claimed: boolean; item?: TodoItem; reason?: string }> {
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
