-- metagit's tables carry its name (docs/seeds/metagit.md): `intents`, `task_graphs` and
-- `task_nodes` become `metagit_intents`, `metagit_graphs` and `metagit_nodes`, so "task graph"
-- names only Task Graph v1 (`graphs`, `graph_subtasks`) in SQL as it does in the API and SDK. A
-- rename moves no row. Constraint and index names follow their table (drizzle derives them from
-- it), including the NOT NULL constraints Postgres 18 names; older servers have none to rename.
--
-- Rolling upgrades: a replica of the previous release still names the old tables until it is
-- replaced, so each old name stays as a view of its table (simple views: Postgres reads and writes
-- through them). The next release drops the three views.
ALTER TABLE "intents" RENAME TO "metagit_intents";--> statement-breakpoint
ALTER TABLE "task_graphs" RENAME TO "metagit_graphs";--> statement-breakpoint
ALTER TABLE "task_nodes" RENAME TO "metagit_nodes";--> statement-breakpoint
ALTER TABLE "metagit_intents" RENAME CONSTRAINT "intents_team_id_id_pk" TO "metagit_intents_team_id_id_pk";--> statement-breakpoint
ALTER TABLE "metagit_intents" RENAME CONSTRAINT "intents_team_id_teams_id_fk" TO "metagit_intents_team_id_teams_id_fk";--> statement-breakpoint
ALTER TABLE "metagit_graphs" RENAME CONSTRAINT "task_graphs_team_id_id_pk" TO "metagit_graphs_team_id_id_pk";--> statement-breakpoint
ALTER TABLE "metagit_graphs" RENAME CONSTRAINT "task_graphs_team_id_root_intent_id_intents_team_id_id_fk" TO "metagit_graphs_team_id_root_intent_id_metagit_intents_team_id_id_fk";--> statement-breakpoint
ALTER TABLE "metagit_graphs" RENAME CONSTRAINT "task_graphs_team_id_teams_id_fk" TO "metagit_graphs_team_id_teams_id_fk";--> statement-breakpoint
ALTER TABLE "metagit_graphs" RENAME CONSTRAINT "task_graphs_team_scope_unique" TO "metagit_graphs_team_scope_unique";--> statement-breakpoint
ALTER TABLE "metagit_nodes" RENAME CONSTRAINT "task_nodes_team_id_graph_id_node_id_pk" TO "metagit_nodes_team_id_graph_id_node_id_pk";--> statement-breakpoint
ALTER TABLE "metagit_nodes" RENAME CONSTRAINT "task_nodes_team_id_graph_id_task_graphs_team_id_id_fk" TO "metagit_nodes_team_id_graph_id_metagit_graphs_team_id_id_fk";--> statement-breakpoint
ALTER TABLE "metagit_nodes" RENAME CONSTRAINT "task_nodes_todo_id_todos_id_fk" TO "metagit_nodes_todo_id_todos_id_fk";--> statement-breakpoint
ALTER TABLE "metagit_nodes" RENAME CONSTRAINT "task_nodes_todo_id_unique" TO "metagit_nodes_todo_id_unique";--> statement-breakpoint
DO $$
DECLARE c record;
BEGIN
  FOR c IN
    SELECT r.relname AS tbl, k.conname AS old,
           'metagit_' || CASE WHEN r.relname = 'metagit_intents' THEN 'intents' WHEN r.relname = 'metagit_graphs' THEN 'graphs' ELSE 'nodes' END
             || substr(k.conname, length(CASE WHEN r.relname = 'metagit_intents' THEN 'intents' WHEN r.relname = 'metagit_graphs' THEN 'task_graphs' ELSE 'task_nodes' END) + 1) AS new
      FROM pg_constraint k JOIN pg_class r ON r.oid = k.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
     WHERE n.nspname = current_schema() AND k.contype = 'n'
       AND r.relname IN ('metagit_intents', 'metagit_graphs', 'metagit_nodes')
       AND k.conname NOT LIKE 'metagit\_%'
  LOOP
    EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', c.tbl, c.old, c.new);
  END LOOP;
END $$;--> statement-breakpoint
CREATE VIEW "intents" AS SELECT * FROM "metagit_intents";--> statement-breakpoint
CREATE VIEW "task_graphs" AS SELECT * FROM "metagit_graphs";--> statement-breakpoint
CREATE VIEW "task_nodes" AS SELECT * FROM "metagit_nodes";
