CREATE TABLE "tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text,
	"session_id" text,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" text,
	"rotated_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "tokens_token_hash_unique" UNIQUE("token_hash"),
	CONSTRAINT "tokens_one_owner_check" CHECK (("tokens"."user_id" is null) <> ("tokens"."session_id" is null))
);
--> statement-breakpoint
ALTER TABLE "users" DROP CONSTRAINT "users_token_hash_unique";--> statement-breakpoint
ALTER TABLE "sessions" DROP CONSTRAINT "sessions_token_hash_unique";--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tokens" ADD CONSTRAINT "tokens_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "tokens_live_name_idx" ON "tokens" USING btree (coalesce("user_id", "session_id"),"name") WHERE "tokens"."revoked_at" is null;--> statement-breakpoint
CREATE INDEX "tokens_user_idx" ON "tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "tokens_session_idx" ON "tokens" USING btree ("session_id");--> statement-breakpoint
-- Upgrade (issue 21): every existing operator and session token keeps working, as a token named
-- "default" of its principal; the columns that held them go.
INSERT INTO "tokens" ("id", "user_id", "name", "token_hash", "created_at", "created_by")
  SELECT 'tk-' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 16), "id", 'default', "token_hash", "created_at", "id" FROM "users";--> statement-breakpoint
INSERT INTO "tokens" ("id", "session_id", "name", "token_hash", "created_at", "created_by")
  SELECT 'tk-' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 16), "id", 'default', "token_hash", "created_at", "created_by" FROM "sessions";--> statement-breakpoint
ALTER TABLE "users" DROP COLUMN "token_hash";--> statement-breakpoint
ALTER TABLE "sessions" DROP COLUMN "token_hash";