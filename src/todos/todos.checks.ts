import { activeSessionPrincipal } from '../auth/principals.repo.js';
import type { Db } from '../db/client.js';
import { fail } from '../http/errors.js';
import { accessToScope, type TeamScope } from '../scopes/scopes.js';
import { contractOf, teamScopeOf } from './todos.view.js';
import { bytes, me, type Ctx } from './todos.context.js';

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
export function checkResult(ctx: Ctx, result: unknown): unknown {
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

/**
 * Items of a `graph:` scope are Task Graph v1 subtasks: their structure (existence, edges,
 * assignment, text) and their state (done, block, reopen) belong to the graph contract and its
 * routes, so the generic todo routes refuse to change them (409 `managed_by_graph`); they still
 * read and stream them, and the lease heartbeat works on both.
 */
export function assertNotGraphManaged(scope: string): void {
  const contract = contractOf(scope);
  if (contract === 'graph') fail('managed_by_graph', `items of ${scope} are Task Graph v1 subtasks; change them through /v1/graphs`);
  if (contract === 'metagit') fail('managed_by_graph', `items of ${scope} are metagit task nodes; change them through /v1/task-graphs`);
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
