-- Per-scope counts also keep `waiting`: stored-todo items with an unfinished dependency (a subset
-- of `todo`), so the work gauges and GET /v1/scopes tell ready work from work waiting on a
-- dependency without counting items. The rows already there count none; one row per scope adds
-- the items waiting now, under a SHARE lock on todos, then the trigger keeps it.
-- The lock first: a writer holding todos and waiting on scope_counts must not meet this ALTER.
LOCK TABLE todos IN SHARE MODE;--> statement-breakpoint
ALTER TABLE "scope_counts" ADD COLUMN "waiting" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
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
$$;--> statement-breakpoint
INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done, waiting)
SELECT team_id, scope, 0, 0, 0, 0, 0, count(*) FROM todos WHERE status = 'todo' AND unfinished_deps > 0 GROUP BY team_id, scope;
