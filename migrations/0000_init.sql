CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"event" text NOT NULL,
	"subject_id" text,
	"payload" jsonb NOT NULL,
	"tx" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "scopes" (
	"scope" text PRIMARY KEY NOT NULL,
	"last_position" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"parent_id" text,
	"root_id" text NOT NULL,
	"system_kind" text,
	"token_hash" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stopped_at" timestamp with time zone,
	"revision" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "sessions_token_hash_unique" UNIQUE("token_hash"),
	CONSTRAINT "sessions_status_check" CHECK ("sessions"."status" in ('active', 'stopped', 'deleted'))
);
--> statement-breakpoint
CREATE TABLE "todo_dependencies" (
	"todo_id" text NOT NULL,
	"dependency_id" text NOT NULL,
	CONSTRAINT "todo_dependencies_todo_id_dependency_id_pk" PRIMARY KEY("todo_id","dependency_id"),
	CONSTRAINT "todo_dependencies_no_self" CHECK ("todo_dependencies"."todo_id" <> "todo_dependencies"."dependency_id")
);
--> statement-breakpoint
CREATE TABLE "todos" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"title" text NOT NULL,
	"note" text,
	"status" text DEFAULT 'todo' NOT NULL,
	"owner" text,
	"assignee" text,
	"parent_id" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"progress_at" timestamp with time zone,
	"revision" integer DEFAULT 1 NOT NULL,
	"position" integer NOT NULL,
	"unfinished_deps" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "todos_status_check" CHECK ("todos"."status" in ('todo', 'in-progress', 'done', 'blocked')),
	CONSTRAINT "todos_owner_check" CHECK (("todos"."status" = 'todo') = ("todos"."owner" is null)),
	CONSTRAINT "todos_title_check" CHECK (octet_length("todos"."title") between 1 and 500),
	CONSTRAINT "todos_note_check" CHECK ("todos"."note" is null or octet_length("todos"."note") <= 2000),
	CONSTRAINT "todos_unfinished_check" CHECK ("todos"."unfinished_deps" >= 0)
);
--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_parent_id_sessions_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todo_dependencies" ADD CONSTRAINT "todo_dependencies_todo_id_todos_id_fk" FOREIGN KEY ("todo_id") REFERENCES "public"."todos"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todo_dependencies" ADD CONSTRAINT "todo_dependencies_dependency_id_todos_id_fk" FOREIGN KEY ("dependency_id") REFERENCES "public"."todos"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todos" ADD CONSTRAINT "todos_parent_id_todos_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."todos"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "events_topic_tx_id_idx" ON "events" USING btree ("topic","tx","id");--> statement-breakpoint
CREATE INDEX "events_created_idx" ON "events" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "sessions_root_idx" ON "sessions" USING btree ("root_id");--> statement-breakpoint
CREATE INDEX "sessions_parent_idx" ON "sessions" USING btree ("parent_id");--> statement-breakpoint
CREATE INDEX "todo_dependencies_dependency_idx" ON "todo_dependencies" USING btree ("dependency_id");--> statement-breakpoint
CREATE INDEX "todos_scope_position_idx" ON "todos" USING btree ("scope","position","id");--> statement-breakpoint
CREATE INDEX "todos_ready_idx" ON "todos" USING btree ("scope","position","id") WHERE "todos"."status" = 'todo' and "todos"."owner" is null and "todos"."unfinished_deps" = 0;--> statement-breakpoint
CREATE INDEX "todos_in_progress_idx" ON "todos" USING btree ("progress_at") WHERE "todos"."status" = 'in-progress';--> statement-breakpoint
CREATE INDEX "todos_done_idx" ON "todos" USING btree ("updated_at") WHERE "todos"."status" = 'done';--> statement-breakpoint
CREATE INDEX "todos_owner_idx" ON "todos" USING btree ("owner") WHERE "todos"."owner" is not null;--> statement-breakpoint
CREATE INDEX "todos_parent_idx" ON "todos" USING btree ("parent_id");