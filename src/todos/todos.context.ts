import type { Principal } from '../auth/principal.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { emitsFor, topicOf, type EventInput } from '../events/events.repo.js';
import { fail } from '../http/errors.js';
import { accessToScope } from '../scopes/scopes.js';
import { eventPayload, itemColumns, teamScopeOf, type TodoRow } from './todos.view.js';

/** What every service call needs: the pool, the live configuration and the caller. */
export interface Ctx {
  sql: Sql;
  config: Config;
  principal: Principal;
}

export const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

export const me = (ctx: Ctx) => (ctx.principal.kind === 'session' ? ctx.principal.id : null);

export const lease = (ctx: Ctx) => ctx.config.todo.claimLeaseMs;

/** The events of `items` under `[todo] emit_events` (none when the scope's events are off), topic `todo:<scope>`. */
export function emitted(ctx: Ctx, scope: string, items: { event: string; row: Parameters<typeof eventPayload>[1] }[]): EventInput[] {
  if (!emitsFor(scope, ctx.config.todo.emitEvents)) return [];
  return items.map(({ event, row }) => ({ topic: topicOf(row.scope), event, subjectId: row.id, payload: eventPayload(event, row) }));
}

/** Reads an item the caller may see, or throws 404 `todo_not_found` (existence is not leaked). */
export async function visibleRow(ctx: Ctx, db: Db, id: string, forUpdate = false): Promise<{ row: TodoRow; override: boolean }> {
  const rows = forUpdate
    ? await db<TodoRow[]>`select ${itemColumns(db, lease(ctx))} from todos t where t.id = ${id} for update of t`
    : await db<TodoRow[]>`select ${itemColumns(db, lease(ctx))} from todos t where t.id = ${id}`;
  const row = rows[0];
  if (!row) fail('todo_not_found', `todo "${id}" not found`);
  const a = await accessToScope(db, ctx.principal, teamScopeOf(row));
  if (!a.inScope) fail('todo_not_found', `todo "${id}" not found`);
  return { row, override: a.override };
}
