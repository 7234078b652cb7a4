-- The ready index in the claim order. Every claim orders by `priority DESC, position, id`,
-- and `priority DESC` in Postgres means `DESC NULLS FIRST`; migration 0018 built the index with
-- `DESC NULLS LAST` (drizzle's rendering of `.desc()`), which the planner cannot use for that order
-- although `priority` is NOT NULL. Every pick was then a scan of all of `todos` plus a sort of the
-- whole ready set. Rebuilt in the order the claims use; test/todos/claim-plan.test.ts guards it.
DROP INDEX "todos_team_ready_idx";--> statement-breakpoint
CREATE INDEX "todos_team_ready_idx" ON "todos" USING btree ("team_id","scope","priority" DESC NULLS FIRST,"position","id") WHERE "todos"."status" = 'todo' and "todos"."owner" is null and "todos"."unfinished_deps" = 0;