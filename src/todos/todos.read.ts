import { fail } from '../http/errors.js';
import { ANY_TEXT, decodeCursor, encodeCursor } from '../http/cursor.js';

import { resolveScope } from '../scopes/scopes.js';
import {
  claimableSql,
  effectiveStatus,
  freeClaimSql,
  isContractScope,
  isFreeClaim,
  isReady,
  itemColumns,
  readySql,
  toItem,
  type StoredStatus,
  type TodoItem,
  type TodoRow,
} from './todos.view.js';
import { me, lease, visibleRow, type Ctx } from './todos.context.js';

/** A todo item's id as `newId('td')` makes it (cursors carry it back). */
const TODO_ID = /^td-[0-9a-f]{16}$/;

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
        ? claimableSql(sql, lease(ctx))
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
  const order = sql`${input.all ? sql`t.scope, ` : sql``}t.position, t.id`;
  const where = (status: typeof statusCond) => sql`
     where ${scopeCond} and ${status} and ${cursorCond}
       ${input.tag !== undefined ? sql`and ${input.tag} = any(t.tags)` : sql``}
       ${owner !== undefined ? sql`and t.owner = ${owner} and not ${free}` : sql``}
       ${input.assignee !== undefined ? sql`and t.assignee = ${input.assignee}` : sql``}`;
  // `status=todo` is the ready items (the ready-by-position index, so a page never walks past a
  // scope's done items) and the free claims (few: expired leases), each read in list order up to
  // a page, then merged.
  const rows =
    input.status === 'todo'
      ? await sql<TodoRow[]>`
    select ${itemColumns(sql, lease(ctx))} from todos t
     where t.id in ((select t.id from todos t ${where(readySql(sql))} order by ${order} limit ${limit + 1})
                    union all
                    (select t.id from todos t ${where(sql`${free} and t.unfinished_deps = 0`)} order by ${order} limit ${limit + 1}))
     order by ${order}
     limit ${limit + 1}`
      : await sql<TodoRow[]>`
    select ${itemColumns(sql, lease(ctx))} from todos t ${where(statusCond)}
     order by ${order}
     limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    items: page.map(toItem),
    nextCursor: more && last ? encodeCursor(input.all ? [last.scope, last.position, last.id] : [last.position, last.id]) : null,
  };
}

/**
 * Why is this item not ready? The same predicate the claim uses, spelled out for the caller:
 * stored status, owner, unfinished dependencies, manual block note, assignee reservation, and a
 * reservation for a session that is stopped or deleted (`assignee_gone`: only the list's override
 * authority may claim it until it is reassigned).
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
  if (row.assignee && row.status !== 'done' && !isContractScope(row.scope)) {
    // Reserved for a session that can no longer claim: only the override authority may, until it is reassigned.
    const [who] = await ctx.sql<{ name: string; status: string }[]>`select name, status from sessions where id = ${row.assignee}`;
    if (who?.status !== 'active')
      reasons.push({
        code: 'assignee_gone',
        message: `reserved for ${row.assignee}${who ? ` (${who.name})` : ''}, which is ${who ? who.status : 'deleted'}: reassign it (PUT /v1/todos/${id}/assignee) so another session may claim it (only the list's override authority may meanwhile)`,
        ids: [row.assignee],
      });
  }
  if (!self) reasons.push({ code: 'claim_requires_session', message: 'the caller is not a session' });
  return { id, ready, claimable: ready && !reservedForOther && self !== null, status: effectiveStatus(row.status, row.unfinished_deps, free), reasons };
}
