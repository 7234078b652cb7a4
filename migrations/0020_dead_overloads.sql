-- The claim functions' dead overloads go (README "Running in production", Upgrades). Each change of
-- coord_next_many's or coord_done_many's arguments (0009, 0011, 0014, 0016, 0018) kept the
-- previous signature as a wrapper, so that a replica of the previous release could keep claiming
-- and completing during a rolling upgrade. The release this one follows (migrations up to 0019)
-- calls only the signatures that stay: coord_next_many(p_team, p_scope, p_actors, p_emit,
-- p_lease_ms, p_min_priority, p_tags_all, p_tags_any, p_assigned_only, p_tokens) and
-- coord_done_many(p_ids, p_actors, p_override, p_lease_ms, p_emit, p_graph, p_results, p_by_kinds,
-- p_by_ids, p_by_tokens), both as src/db/functions/ defines them. The ones dropped here were called
-- only by releases two or more back: the 3-argument next (before 0009; its body was still 0005's,
-- writing events without team or actor), the 4-argument (before 0011), the 8-argument (before
-- 0016), the team-less 9-argument (before 0018), and the 6- and 7-argument done (before 0014 and
-- 0016). Written by npm run db:functions from src/db/functions/ (scripts/db-functions.ts).
DROP FUNCTION IF EXISTS coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms double precision, p_emit text, p_graph boolean);
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms double precision, p_emit text, p_graph boolean, p_results jsonb[]);
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_next_many(p_scope text, p_actors text[], p_emit boolean);
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms double precision);
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms double precision, p_min_priority integer, p_tags_all text[], p_tags_any text[], p_assigned_only boolean);
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms double precision, p_min_priority integer, p_tags_all text[], p_tags_any text[], p_assigned_only boolean, p_tokens text[]);
