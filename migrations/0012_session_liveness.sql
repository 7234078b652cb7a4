-- Session liveness (issue 19): when each session was last seen, an optional auto-stop interval,
-- why a session stopped, and when each in-progress item's claim began (`GET /v1/sessions` shows
-- what a session holds and since when).
--
-- last_seen_at: no default on the ADD, so sessions created before this migration read null ("not
-- seen since liveness tracking began") instead of all claiming the migration's moment; the
-- default then applies to every later insert, the previous release's included.
-- Rolling upgrade: the previous release neither records last_seen_at on calls nor runs the
-- auto-stop sweep, so do not create sessions with a heartbeat interval until every replica runs
-- this release (a session served only by old replicas would look silent to a new replica's sweep).
ALTER TABLE "sessions" ADD COLUMN "last_seen_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sessions" ALTER COLUMN "last_seen_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "heartbeat_interval_ms" integer;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "stop_reason" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_heartbeat_interval_check" CHECK ("sessions"."heartbeat_interval_ms" is null or "sessions"."heartbeat_interval_ms" between 5000 and 86400000);--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_stop_reason_check" CHECK ("sessions"."stop_reason" is null or "sessions"."stop_reason" in ('requested', 'silent', 'ancestor', 'dispatch-ended'));--> statement-breakpoint
CREATE INDEX "sessions_auto_stop_idx" ON "sessions" USING btree ("last_seen_at") WHERE "sessions"."status" = 'active' and "sessions"."heartbeat_interval_ms" is not null;--> statement-breakpoint
-- claimed_at: the start of the current claim. Every claim path (claim, next and its group commit,
-- lease takeover, graph and metagit starts, the previous release's too) sets status and owner, so
-- a trigger keeps it rather than each path: now() when a row enters in-progress or changes owner
-- in it, null when it leaves. The WHEN clause is evaluated without calling the function, so the
-- rows an update does not move in or out of a claim pay nothing.
ALTER TABLE "todos" ADD COLUMN "claimed_at" timestamp with time zone;--> statement-breakpoint
UPDATE "todos" SET "claimed_at" = coalesce("progress_at", "updated_at") WHERE "status" = 'in-progress';--> statement-breakpoint
CREATE OR REPLACE FUNCTION coord_todos_claimed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.claimed_at := CASE WHEN NEW.status = 'in-progress' THEN now() END;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER todos_claimed_at_update BEFORE UPDATE OF status, owner ON todos FOR EACH ROW
  WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW.owner IS DISTINCT FROM OLD.owner)
  EXECUTE FUNCTION coord_todos_claimed_at();--> statement-breakpoint
CREATE TRIGGER todos_claimed_at_insert BEFORE INSERT ON todos FOR EACH ROW
  WHEN (NEW.status = 'in-progress')
  EXECUTE FUNCTION coord_todos_claimed_at();
