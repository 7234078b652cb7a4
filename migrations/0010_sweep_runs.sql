-- Sweep health (defect #9): the last success, its duration and what it changed, per sweep step,
-- recorded by whichever replica ran the tick, so every replica's /readyz and /metrics see the fleet.
CREATE TABLE "sweep_runs" (
	"sweep" text PRIMARY KEY NOT NULL,
	"last_success_at" timestamp with time zone,
	"duration_ms" double precision,
	"changed" integer,
	"last_failure_at" timestamp with time zone
);
