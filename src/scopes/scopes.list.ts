/**
 * `GET /v1/scopes`: the lists a caller may read, each with its progress (seed 000 "In gr list":
 * what is left, at a glance). One row per scope that has ever held an item (the `scopes` table),
 * in scope order, keyset-paginated; a session's own `session:` scope is always listed, even empty.
 *
 * Visibility is exactly the single read's rule (`accessToScope`): only the caller's team's scopes
 * there, users see every scope; a session
 * sees its subtree root's list and the scenario, graph and metagit lists it is in. A scope the
 * caller may not read is never counted, named or hinted at.
 */
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/client.js';
import { ANY_TEXT, decodeCursor, encodeCursor } from '../http/cursor.js';
import { scopeCountsSql } from './scopes.counts.js';
import { accessToScope, defaultScope } from './scopes.js';

/** One scope the caller may read, with its stored-status counts: the `ScopeSummary` of the HTTP API, defined once here. */
export const ScopeSummary = z
  .object({
    scope: z.string().describe('The canonical scope: `session:<root>`, `scenario:<id>`, `graph:<id>` or `metagit:<id>`'),
    kind: z.string().describe('The part before the colon: `session`, `scenario`, `graph` or `metagit`'),
    name: z.string().describe('A scenario’s name; otherwise the part after the colon'),
    total: z.number().int().describe('Items in the scope, sub-items included'),
    done: z.number().int().describe('Stored `done`'),
    inProgress: z
      .number()
      .int()
      .describe(
        'Stored `in-progress` (claimed): an expired claim counts here until it is taken over or the lease sweep reopens it, while reads of the item already show it `todo`',
      ),
    blocked: z.number().int().describe('Stored `blocked` (set by an owner; items waiting on a dependency count as `todo`)'),
    todo: z.number().int().describe('Stored `todo`: ready, or waiting on a dependency'),
    waiting: z
      .number()
      .int()
      .describe('Of `todo`, the items waiting on an unfinished dependency (`todo - waiting` are ready or taken over from an expired claim)'),
    override: z.boolean().describe('Whether the caller holds override authority here: may reopen, assign and block others’ items (seed 000)'),
  })
  .meta({ id: 'ScopeSummary', description: 'A list the caller may read, with stored-status counts' });
export type ScopeSummary = z.output<typeof ScopeSummary>;

interface Row {
  scope: string;
  name: string | null;
  total: number;
  done: number;
  in_progress: number;
  blocked: number;
  todo: number;
  waiting: number;
}

/** Rows read per round while filtering a session's candidates (users take the page in one). */
const CHUNK = 200;

/**
 * A page of the scopes `p` may read, after `cursor`, at most `limit` (the caller clamps it to
 * `list_limit`). Errors: 400 `invalid_cursor`.
 */
export async function listScopes(
  db: Db,
  p: Principal,
  opts: { limit: number; cursor?: string },
): Promise<{ scopes: ScopeSummary[]; nextCursor: string | null }> {
  let after = opts.cursor ? (decodeCursor(opts.cursor, [ANY_TEXT])[0] as string) : null;
  const own = defaultScope(p);
  const out: ScopeSummary[] = [];
  for (;;) {
    const want = p.kind === 'user' ? opts.limit + 1 : CHUNK;
    const rows = await db<Row[]>`
      select s.scope,
             (select sc.name from scenarios sc where s.scope like 'scenario:%' and sc.id = substr(s.scope, 10) and sc.team_id = ${p.teamId}) as name,
             coalesce(c.total, 0) as total, coalesce(c.done, 0) as done, coalesce(c.in_progress, 0) as in_progress,
             coalesce(c.blocked, 0) as blocked, coalesce(c.todo, 0) as todo, coalesce(c.waiting, 0) as waiting
        from ${p.kind === 'session' ? db`(select scope from scopes where team_id = ${p.teamId} union select ${own!}::text)` : db`(select scope from scopes where team_id = ${p.teamId})`} s
        left join lateral ${scopeCountsSql(db, p.teamId, db`s.scope`)} c on true
       where ${after !== null ? db`s.scope > ${after}` : db`true`}
         ${p.kind === 'session' ? db`and (s.scope = ${own!} or s.scope not like 'session:%')` : db``}
       order by s.scope
       limit ${want}`;
    for (const r of rows) {
      after = r.scope;
      const a = await accessToScope(db, p, { teamId: p.teamId, scope: r.scope });
      if (!a.inScope) continue;
      out.push(summary(r, a.override));
      if (out.length > opts.limit) break;
    }
    if (out.length > opts.limit || rows.length < want) break;
  }
  const more = out.length > opts.limit;
  const page = more ? out.slice(0, opts.limit) : out;
  return { scopes: page, nextCursor: more ? encodeCursor([page[page.length - 1].scope]) : null };
}

function summary(r: Row, override: boolean): ScopeSummary {
  const i = r.scope.indexOf(':');
  return {
    scope: r.scope,
    kind: r.scope.slice(0, i),
    name: r.name ?? r.scope.slice(i + 1),
    total: r.total,
    done: r.done,
    inProgress: r.in_progress,
    blocked: r.blocked,
    todo: r.todo,
    waiting: r.waiting,
    override,
  };
}
