-- What the attention list (GET /v1/attention) and the work gauges read without scanning todos:
-- manual blocks by age, items reserved for a session (to find those whose session is gone), and
-- ended graph subtasks by age. Each is a small set on a healthy fleet.
CREATE INDEX "graph_subtasks_outcome_idx" ON "graph_subtasks" USING btree ("team_id","updated_at") WHERE "graph_subtasks"."outcome" is not null;--> statement-breakpoint
CREATE INDEX "todos_blocked_idx" ON "todos" USING btree ("team_id","updated_at") WHERE "todos"."status" = 'blocked';--> statement-breakpoint
CREATE INDEX "todos_reserved_idx" ON "todos" USING btree ("assignee") WHERE "todos"."assignee" is not null and "todos"."status" <> 'done';