-- coord_done_many gains p_graph: `done` of the todo routes (p_graph false) never completes an item
-- a graph contract manages (a Task Graph v1 subtask, a metagit node), and a contract's own
-- completion (p_graph true) completes nothing else.
-- Before, an implementer's dispatch token could `POST /v1/todos/{id}/done` its own subtask and make
-- it SUCCEEDED without evidence or Scope Audit (the owner's group-commit path reads no row first,
-- so the refusal belongs in the guarded UPDATE itself). The body is 0004's with that one predicate;
-- applied migrations are never edited, so it is restated here. Callers must pass six arguments, so
-- every replica must run this version (README "Upgrades").
DROP FUNCTION IF EXISTS coord_done_many(text[], text[], boolean, float8, text);
--> statement-breakpoint
CREATE FUNCTION coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms float8, p_emit text, p_graph boolean)
RETURNS SETOF todos LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$  -- see coord_next_many
DECLARE
  done_ids text[];
  done_ords bigint[];
  flipped int;
BEGIN
  -- The items are found by primary key (`id = ANY`); an id's position in p_ids is its request
  -- (ids are distinct within a batch: the caller runs a repeated id alone). The owner test is
  -- written so no index can serve it: with statistics taken before the claims (every owner
  -- NULL), the planner would otherwise scan all of todos_owner_idx instead of 32 primary keys.
  WITH c AS (
    UPDATE todos t SET status = 'done', revision = t.revision + 1, updated_at = now(), progress_at = NULL
     WHERE t.id = ANY (p_ids) AND t.status IN ('in-progress', 'blocked')
       AND (t.scope LIKE 'graph:%' OR t.scope LIKE 'metagit:%') = p_graph
       AND (p_override OR t.owner IS NOT DISTINCT FROM p_actors[array_position(p_ids, t.id)])
       AND NOT (t.owner IS NOT DISTINCT FROM p_actors[array_position(p_ids, t.id)] AND t.status = 'in-progress'
                AND p_lease_ms > 0 AND t.progress_at + make_interval(secs => p_lease_ms / 1000) <= now())
    RETURNING t.id, array_position(p_ids, t.id)::bigint AS ord)
  SELECT coalesce(array_agg(c.id ORDER BY c.ord), '{}'), coalesce(array_agg(c.ord ORDER BY c.ord), '{}')
    INTO done_ids, done_ords FROM c;
  IF cardinality(done_ids) > 0 THEN
    WITH d AS (
      SELECT x.id, x.ord FROM unnest(done_ids, done_ords) x(id, ord)),
    k AS (
      SELECT e.todo_id AS id, count(*)::int AS n, max(d.ord) AS ord
        FROM todo_dependencies e JOIN d ON d.id = e.dependency_id
       GROUP BY e.todo_id),
    l AS (
      SELECT t.id FROM todos t JOIN k ON k.id = t.id ORDER BY t.id FOR UPDATE OF t),
    u AS (
      UPDATE todos t
         SET unfinished_deps = t.unfinished_deps - k.n,
             revision = t.revision + CASE WHEN t.status = 'todo' AND t.unfinished_deps - k.n = 0 THEN 1 ELSE 0 END,
             updated_at = CASE WHEN t.status = 'todo' AND t.unfinished_deps - k.n = 0 THEN now() ELSE t.updated_at END
        FROM k JOIN l ON l.id = k.id
       WHERE t.id = k.id
      RETURNING t.id, t.scope, t.status, t.unfinished_deps, t.revision, k.ord),
    ev AS (
      INSERT INTO events (topic, event, subject_id, payload)
      SELECT x.topic, x.event, x.subject_id, x.payload FROM (
        SELECT d.ord, 0 AS kind, t.id AS subject_id, 'todo:' || t.scope AS topic, 'done' AS event, t.scope,
               jsonb_strip_nulls(jsonb_build_object('event', 'done', 'id', t.id, 'scope', t.scope, 'status', 'done',
                 'revision', t.revision, 'owner', t.owner,
                 'blockedBy', CASE WHEN t.unfinished_deps > 0 THEN to_jsonb(nullif(coord_blocked_by(t.id), '{}')) END)) AS payload
          FROM d JOIN todos t ON t.id = d.id AND t.id = ANY (done_ids)
        UNION ALL
        SELECT u.ord, 1, u.id, 'todo:' || u.scope, 'unblocked', u.scope,
               jsonb_build_object('event', 'unblocked', 'id', u.id, 'scope', u.scope, 'status', 'todo', 'revision', u.revision)
          FROM u WHERE u.status = 'todo' AND u.unfinished_deps = 0) x
       WHERE p_emit = 'all' OR (p_emit = 'scenario' AND x.scope LIKE 'scenario:%')
       ORDER BY x.ord, x.kind, x.subject_id)
    SELECT count(*) INTO flipped FROM u;
  END IF;
  RETURN QUERY
  SELECT t.* FROM unnest(p_ids) WITH ORDINALITY q(id, ord)
    LEFT JOIN unnest(done_ids, done_ords) x(id, ord) ON x.ord = q.ord
    LEFT JOIN todos t ON t.id = x.id AND t.id = ANY (done_ids)
   ORDER BY q.ord;
END;
$$;
