-- Task Graph v1 execution (seed 002; seeds-notes §3.7–§3.11): sessions bound to a configured Agent
-- (and, for a dispatch, to its graph and subtask), the dispatch record, evidence, audit, error and
-- cleanup facts of each subtask, and the graph base, integration and review records.
ALTER TABLE "graph_subtasks" ADD COLUMN "attempt" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "session_id" text;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "dispatched_by" text;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "dispatched_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "implementation_commit" text;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "scope_evidence" jsonb;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "last_error" jsonb;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD COLUMN "cleanup" jsonb;--> statement-breakpoint
ALTER TABLE "graphs" ADD COLUMN "base_commit" text;--> statement-breakpoint
ALTER TABLE "graphs" ADD COLUMN "integration" jsonb;--> statement-breakpoint
ALTER TABLE "graphs" ADD COLUMN "review" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "agent_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "graph_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "subtask_id" text;--> statement-breakpoint
CREATE INDEX "sessions_agent_idx" ON "sessions" USING btree ("agent_id") WHERE "sessions"."agent_id" is not null;