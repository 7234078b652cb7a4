/**
 * Per-scope item counts by stored status (`GET /v1/scopes`, scenarios, session progress), read and
 * folded here. They are kept as delta rows in `scope_counts` (src/db/schema/scopes.ts) by the
 * `coord_scope_counts` trigger on `todos` (src/db/functions/coord_scope_counts.sql), in each
 * change's transaction, so they are exact and no writer waits on a shared counter row. Coord's own
 * rule (what a list's progress costs to read), not a seed's.
 */
import type postgres from 'postgres';
import type { Db, Sql } from '../db/client.js';

/** A piece of SQL built with the same connection's tagged template. */
type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * SQL subquery (use as `left join lateral … c on true`): one scope's item counts by stored status
 * as ints, 0 for a scope without items: `total`, `todo`, `in_progress`, `blocked`, `done`, and
 * `waiting` (the stored-todo items with an unfinished dependency, a subset of `todo`). Sums the
 * scope's `scope_counts` delta rows (src/db/schema/scopes.ts), which the `coord_scope_counts`
 * trigger keeps in each change's transaction: the same answer as counting the scope's items, at
 * the cost of the rows written since the last fold instead of the scope's size.
 */
export function scopeCountsSql(sql: Db, teamId: string | Fragment, scope: string | Fragment) {
  return sql`(select coalesce(sum(sc.total), 0)::int as total, coalesce(sum(sc.todo), 0)::int as todo,
                     coalesce(sum(sc.in_progress), 0)::int as in_progress, coalesce(sum(sc.blocked), 0)::int as blocked,
                     coalesce(sum(sc.done), 0)::int as done, coalesce(sum(sc.waiting), 0)::int as waiting
                from scope_counts sc where sc.team_id = ${teamId} and sc.scope = ${scope})`;
}

/**
 * The sweep's `scope-counts` step: folds each scope's `scope_counts` delta rows into one row (a
 * scope whose counts are all zero keeps none), so `scopeCountsSql` sums few rows. One statement:
 * rows a concurrent change appends meanwhile are not in its snapshot and stay, and a concurrent
 * fold skips the rows this one deleted, so no count is lost or doubled. Returns the rows removed.
 */
export async function foldScopeCounts(sql: Sql): Promise<number> {
  const [{ folded }] = await sql<{ folded: number }[]>`
    with gone as (
      delete from scope_counts
       where (team_id, scope) in (select team_id, scope from scope_counts group by team_id, scope having count(*) > 1)
      returning *),
    kept as (
      insert into scope_counts (team_id, scope, total, todo, in_progress, blocked, done, waiting)
      select * from (
        select team_id, scope, sum(total)::int as total, sum(todo)::int as todo, sum(in_progress)::int as in_progress,
               sum(blocked)::int as blocked, sum(done)::int as done, sum(waiting)::int as waiting
          from gone group by team_id, scope) s
       where (s.total, s.todo, s.in_progress, s.blocked, s.done, s.waiting) <> (0, 0, 0, 0, 0, 0)
      returning 1)
    select ((select count(*) from gone) - (select count(*) from kept))::int as folded`;
  return folded;
}
