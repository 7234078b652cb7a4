CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"adapter" text,
	"command" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "graph_subtasks" (
	"graph_id" text NOT NULL,
	"subtask_id" text NOT NULL,
	"todo_id" text NOT NULL,
	"implementer" text NOT NULL,
	"title" text,
	"spec" text NOT NULL,
	"depends_on" text[] DEFAULT '{}'::text[] NOT NULL,
	"outcome" text,
	"reason" jsonb,
	"evidence" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "graph_subtasks_graph_id_subtask_id_pk" PRIMARY KEY("graph_id","subtask_id"),
	CONSTRAINT "graph_subtasks_todo_id_unique" UNIQUE("todo_id")
);
--> statement-breakpoint
CREATE TABLE "graphs" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"parent" jsonb NOT NULL,
	"max_concurrency" integer NOT NULL,
	"intent_map" jsonb,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revision" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "graphs_scope_unique" UNIQUE("scope")
);
--> statement-breakpoint
CREATE TABLE "scenario_members" (
	"scenario_id" text NOT NULL,
	"name" text NOT NULL,
	"session_id" text NOT NULL,
	"task" text,
	"depends_on" text[] DEFAULT '{}'::text[] NOT NULL,
	"shared" boolean DEFAULT false NOT NULL,
	"requires_result" boolean DEFAULT false NOT NULL,
	"result" jsonb,
	"result_at" timestamp with time zone,
	CONSTRAINT "scenario_members_scenario_id_name_pk" PRIMARY KEY("scenario_id","name"),
	CONSTRAINT "scenario_members_session_unique" UNIQUE("scenario_id","session_id")
);
--> statement-breakpoint
CREATE TABLE "scenarios" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"orchestrator_id" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	"revision" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "scenarios_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "todo_scenario_seeds" (
	"todo_id" text PRIMARY KEY NOT NULL,
	"scenario_id" text NOT NULL,
	"member_name" text NOT NULL,
	CONSTRAINT "todo_scenario_seeds_member_unique" UNIQUE("scenario_id","member_name")
);
--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD CONSTRAINT "graph_subtasks_graph_id_graphs_id_fk" FOREIGN KEY ("graph_id") REFERENCES "public"."graphs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "graph_subtasks" ADD CONSTRAINT "graph_subtasks_todo_id_todos_id_fk" FOREIGN KEY ("todo_id") REFERENCES "public"."todos"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scenario_members" ADD CONSTRAINT "scenario_members_scenario_id_scenarios_id_fk" FOREIGN KEY ("scenario_id") REFERENCES "public"."scenarios"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todo_scenario_seeds" ADD CONSTRAINT "todo_scenario_seeds_todo_id_todos_id_fk" FOREIGN KEY ("todo_id") REFERENCES "public"."todos"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "todo_scenario_seeds" ADD CONSTRAINT "todo_scenario_seeds_scenario_id_scenarios_id_fk" FOREIGN KEY ("scenario_id") REFERENCES "public"."scenarios"("id") ON DELETE cascade ON UPDATE no action;