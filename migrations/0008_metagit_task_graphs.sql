-- metagit RFC-0008 (seed 001): intents, task graphs as containers in the one engine (their nodes are
-- work items in scope metagit:<graph_id>), and the node facts beside each engine row.
CREATE TABLE "intents" (
	"id" text PRIMARY KEY NOT NULL,
	"title" text NOT NULL,
	"goal" text NOT NULL,
	"acceptance" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"project" text,
	"repos" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"objective_id" text,
	"handoff_id" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "task_graphs" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"title" text NOT NULL,
	"root_intent_id" text NOT NULL,
	"objective_id" text,
	"handoff_id" text,
	"status" text DEFAULT 'active' NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revision" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "task_graphs_scope_unique" UNIQUE("scope")
);
--> statement-breakpoint
CREATE TABLE "task_nodes" (
	"graph_id" text NOT NULL,
	"node_id" text NOT NULL,
	"todo_id" text NOT NULL,
	"intent_id" text,
	"project" text,
	"repository" text,
	"agent_id" text,
	"acl" jsonb,
	"priority" integer DEFAULT 0 NOT NULL,
	"cancelled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "task_nodes_graph_id_node_id_pk" PRIMARY KEY("graph_id","node_id"),
	CONSTRAINT "task_nodes_todo_id_unique" UNIQUE("todo_id")
);
--> statement-breakpoint
ALTER TABLE "task_graphs" ADD CONSTRAINT "task_graphs_root_intent_id_intents_id_fk" FOREIGN KEY ("root_intent_id") REFERENCES "public"."intents"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_nodes" ADD CONSTRAINT "task_nodes_graph_id_task_graphs_id_fk" FOREIGN KEY ("graph_id") REFERENCES "public"."task_graphs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "task_nodes" ADD CONSTRAINT "task_nodes_todo_id_todos_id_fk" FOREIGN KEY ("todo_id") REFERENCES "public"."todos"("id") ON DELETE cascade ON UPDATE no action;