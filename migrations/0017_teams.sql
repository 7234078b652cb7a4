-- Teams, step 1 of issue 21 (docs/architecture.md "Teams"): the `teams` table and the team of
-- every principal and container. A database from before teams becomes the one team `tm-default`,
-- and every existing row joins it. Every operator there was made by the bootstrap (start-up or
-- COORD_ADMIN_TOKEN), so each becomes a server administrator (`role = 'admin'`). The columns keep
-- `tm-default` as their default only so that a replica of the previous release can still insert
-- during a rolling upgrade; Coord itself names the team in every insert, and the step that lets
-- a second team exist drops the defaults.
CREATE TABLE "teams" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revision" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "teams_name_unique" UNIQUE("name")
);
--> statement-breakpoint
INSERT INTO "teams" ("id", "name", "created_by") VALUES ('tm-default', 'default', 'bootstrap');--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "role" text DEFAULT 'operator' NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "graphs" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "intents" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "task_graphs" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "scenarios" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "scopes" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "team_id" text DEFAULT 'tm-default' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graphs" ADD CONSTRAINT "graphs_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intents" ADD CONSTRAINT "intents_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_graphs" ADD CONSTRAINT "task_graphs_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scenarios" ADD CONSTRAINT "scenarios_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scopes" ADD CONSTRAINT "scopes_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_role_check" CHECK ("users"."role" in ('operator', 'admin'));--> statement-breakpoint
UPDATE "users" SET "role" = 'admin';
