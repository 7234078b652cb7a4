-- Results on done (issue 19): `POST /v1/todos/{id}/done` may carry a bounded `result` (a text
-- result is stored as a JSON string), kept with the item while it is done, in the `done` event
-- payload, and readable by its dependents (`GET /v1/todos/{id}/dependencies`).
--
-- 1. `todos.result`: NULL unless the item is done with a result. The size bound ([todo]
--    max_result, measured on the serialised JSON) is configuration, checked by the server.
ALTER TABLE "todos" ADD COLUMN "result" jsonb;--> statement-breakpoint
ALTER TABLE "todos" ADD CONSTRAINT "todos_result_check" CHECK ("todos"."result" is null or "todos"."status" = 'done');--> statement-breakpoint
-- 2. Leaving done clears the result (it is no longer done): reopen, and any other writer that
--    moves a done item back, including a replica of the previous release during a rolling
--    upgrade, which does not know the column. One rule in one place; the WHEN clause keeps the
--    hot path (claims, heartbeats) free of a function call: it fires only on a row with a result.
CREATE OR REPLACE FUNCTION coord_todos_clear_result() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.result := NULL;
  RETURN NEW;
END;
$$;--> statement-breakpoint
CREATE TRIGGER todos_clear_result BEFORE UPDATE ON todos FOR EACH ROW
  WHEN (NEW.status <> 'done' AND NEW.result IS NOT NULL)
  EXECUTE FUNCTION coord_todos_clear_result();--> statement-breakpoint
-- 3. coord_done_many gains p_results: request i's result is p_results[i] (NULL: none; a NULL
--    array: none for any). It is stored in the guarded UPDATE itself, so each result lands on its
--    own item whatever the batch, and the `done` event carries it as `result`. The body is 0007's
--    otherwise (applied migrations are never edited, so it is restated here). The result is added
--    to the payload after jsonb_strip_nulls, which would otherwise strip the nulls inside a JSON
--    result too.
CREATE FUNCTION coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms float8, p_emit text, p_graph boolean, p_results jsonb[])
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
    UPDATE todos t SET status = 'done', revision = t.revision + 1, updated_at = now(), progress_at = NULL,
                       result = p_results[array_position(p_ids, t.id)]
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
                 'blockedBy', CASE WHEN t.unfinished_deps > 0 THEN to_jsonb(nullif(coord_blocked_by(t.id), '{}')) END))
                 || CASE WHEN t.result IS NOT NULL THEN jsonb_build_object('result', t.result) ELSE '{}'::jsonb END AS payload
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
$$;--> statement-breakpoint
-- 4. The six-argument form (0007) becomes a wrapper that completes without results: a replica of
--    the previous release keeps working during a rolling upgrade, and the graph contracts'
--    completions (which carry no result) keep calling it.
CREATE OR REPLACE FUNCTION coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms float8, p_emit text, p_graph boolean)
RETURNS SETOF todos LANGUAGE sql VOLATILE AS $$
  SELECT * FROM coord_done_many(p_ids, p_actors, p_override, p_lease_ms, p_emit, p_graph, NULL::jsonb[]);
$$;
