-- coord_scope_counts: trigger function of todos_scope_counts_insert / _update / _delete / _truncate
-- (on todos, AFTER, FOR EACH STATEMENT, with the statement's transition tables old_rows / new_rows). Appends
-- to scope_counts one delta row per (team, scope) whose counts the statement changed: +1 per
-- inserted row, -1 per deleted one, and for an update the new rows minus the old ones, so a claim
-- moves one from todo to in_progress and an update that changes no status (a heartbeat, an edit)
-- writes nothing. `waiting` counts the stored-todo items with an unfinished dependency (a subset
-- of `todo`: ready = todo - waiting), so a cascade that unblocks one moves it out of waiting.
-- Inserts only: writers never wait on one another's counter. Read as sums by scopeCountsSql,
-- folded by foldScopeCounts (both src/scopes/scopes.counts.ts, the sweep's scope-counts step).
-- Coord's own rule (what GET /v1/scopes and the work gauges show), not a seed's.
CREATE OR REPLACE FUNCTION coord_scope_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done, waiting)
    SELECT * FROM (
      SELECT team_id, scope, sum(n)::int AS total, coalesce(sum(n) FILTER (WHERE status = 'todo'), 0)::int AS todo,
             coalesce(sum(n) FILTER (WHERE status = 'in-progress'), 0)::int AS in_progress,
             coalesce(sum(n) FILTER (WHERE status = 'blocked'), 0)::int AS blocked,
             coalesce(sum(n) FILTER (WHERE status = 'done'), 0)::int AS done,
             coalesce(sum(n) FILTER (WHERE status = 'todo' AND unfinished_deps > 0), 0)::int AS waiting
        FROM (SELECT team_id, scope, status, unfinished_deps, 1 AS n FROM new_rows) d
       GROUP BY team_id, scope) c
     WHERE (c.total, c.todo, c.in_progress, c.blocked, c.done, c.waiting) <> (0, 0, 0, 0, 0, 0);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done, waiting)
    SELECT * FROM (
      SELECT team_id, scope, sum(n)::int AS total, coalesce(sum(n) FILTER (WHERE status = 'todo'), 0)::int AS todo,
             coalesce(sum(n) FILTER (WHERE status = 'in-progress'), 0)::int AS in_progress,
             coalesce(sum(n) FILTER (WHERE status = 'blocked'), 0)::int AS blocked,
             coalesce(sum(n) FILTER (WHERE status = 'done'), 0)::int AS done,
             coalesce(sum(n) FILTER (WHERE status = 'todo' AND unfinished_deps > 0), 0)::int AS waiting
        FROM (SELECT team_id, scope, status, unfinished_deps, -1 AS n FROM old_rows) d
       GROUP BY team_id, scope) c
     WHERE (c.total, c.todo, c.in_progress, c.blocked, c.done, c.waiting) <> (0, 0, 0, 0, 0, 0);
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done, waiting)
    SELECT * FROM (
      SELECT team_id, scope, sum(n)::int AS total, coalesce(sum(n) FILTER (WHERE status = 'todo'), 0)::int AS todo,
             coalesce(sum(n) FILTER (WHERE status = 'in-progress'), 0)::int AS in_progress,
             coalesce(sum(n) FILTER (WHERE status = 'blocked'), 0)::int AS blocked,
             coalesce(sum(n) FILTER (WHERE status = 'done'), 0)::int AS done,
             coalesce(sum(n) FILTER (WHERE status = 'todo' AND unfinished_deps > 0), 0)::int AS waiting
        FROM (SELECT team_id, scope, status, unfinished_deps, 1 AS n FROM new_rows
              UNION ALL
              SELECT team_id, scope, status, unfinished_deps, -1 FROM old_rows) d
       GROUP BY team_id, scope) c
     WHERE (c.total, c.todo, c.in_progress, c.blocked, c.done, c.waiting) <> (0, 0, 0, 0, 0, 0);
  ELSE -- TRUNCATE (todos_scope_counts_truncate): no rows, no counts
    DELETE FROM scope_counts;
  END IF;
  RETURN NULL;
END
$$;
