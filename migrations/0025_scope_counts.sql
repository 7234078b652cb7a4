-- Per-scope counts by stored status, as deltas (src/db/schema/scopes.ts scopeCounts): GET /v1/scopes
-- counted every item of every scope it listed (421 ms for a 1,000,000-item scope). A statement-level
-- trigger appends one row per scope a statement changed, the sweep folds them, reads sum them.
CREATE TABLE "scope_counts" (
	"team_id" text NOT NULL,
	"scope" text NOT NULL,
	"total" integer NOT NULL,
	"todo" integer NOT NULL,
	"in_progress" integer NOT NULL,
	"blocked" integer NOT NULL,
	"done" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "scope_counts_scope_idx" ON "scope_counts" USING btree ("team_id","scope");--> statement-breakpoint
CREATE OR REPLACE FUNCTION coord_scope_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done)
    SELECT team_id, scope, count(*), count(*) FILTER (WHERE status = 'todo'), count(*) FILTER (WHERE status = 'in-progress'),
           count(*) FILTER (WHERE status = 'blocked'), count(*) FILTER (WHERE status = 'done')
      FROM new_rows GROUP BY team_id, scope;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done)
    SELECT team_id, scope, -count(*), -count(*) FILTER (WHERE status = 'todo'), -count(*) FILTER (WHERE status = 'in-progress'),
           -count(*) FILTER (WHERE status = 'blocked'), -count(*) FILTER (WHERE status = 'done')
      FROM old_rows GROUP BY team_id, scope;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done)
    SELECT * FROM (
      SELECT team_id, scope, sum(n)::int AS total, coalesce(sum(n) FILTER (WHERE status = 'todo'), 0)::int AS todo,
             coalesce(sum(n) FILTER (WHERE status = 'in-progress'), 0)::int AS in_progress,
             coalesce(sum(n) FILTER (WHERE status = 'blocked'), 0)::int AS blocked,
             coalesce(sum(n) FILTER (WHERE status = 'done'), 0)::int AS done
        FROM (SELECT team_id, scope, status, 1 AS n FROM new_rows
              UNION ALL
              SELECT team_id, scope, status, -1 FROM old_rows) d
       GROUP BY team_id, scope) c
     WHERE (c.total, c.todo, c.in_progress, c.blocked, c.done) <> (0, 0, 0, 0, 0);
  ELSE -- TRUNCATE (todos_scope_counts_truncate): no rows, no counts
    DELETE FROM scope_counts;
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER todos_scope_counts_insert AFTER INSERT ON todos REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION coord_scope_counts();--> statement-breakpoint
CREATE TRIGGER todos_scope_counts_update AFTER UPDATE ON todos REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION coord_scope_counts();--> statement-breakpoint
CREATE TRIGGER todos_scope_counts_delete AFTER DELETE ON todos REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION coord_scope_counts();--> statement-breakpoint
CREATE TRIGGER todos_scope_counts_truncate AFTER TRUNCATE ON todos
  FOR EACH STATEMENT EXECUTE FUNCTION coord_scope_counts();--> statement-breakpoint
-- The items already there, one row per scope. Taken under a SHARE lock on todos, so no write
-- lands between the count and the triggers (a migration runs in one transaction).
LOCK TABLE todos IN SHARE MODE;--> statement-breakpoint
INSERT INTO scope_counts (team_id, scope, total, todo, in_progress, blocked, done)
SELECT team_id, scope, count(*), count(*) FILTER (WHERE status = 'todo'), count(*) FILTER (WHERE status = 'in-progress'),
       count(*) FILTER (WHERE status = 'blocked'), count(*) FILTER (WHERE status = 'done')
  FROM todos GROUP BY team_id, scope;
