-- coord_done_many: `done` (seed 000: from in-progress or blocked, the owner kept, the cascade to
-- dependents and the events in the same transaction) for a batch of distinct items, as if the
-- requests ran one after another in arrival order.
-- Called by src/todos/todos.repo.ts: `completeMany` (the group commit of the owner's `done` and
-- the override `done` of the todo routes, p_graph false) and `completeContractRow` (the
-- completion of a Task Graph v1 subtask, seed 002, or a metagit node, seed 001, by its contract:
-- p_graph true, p_override true).
--
-- Arguments: p_ids[i] and p_actors[i] are request i's item and its claimed owner (p_ids distinct:
-- the caller runs a repeated id alone); p_override lets anyone complete; p_lease_ms (0 = none)
-- refuses an owner whose lease expired; p_emit is the scope's `emit_events` ('all', 'scenario',
-- 'none'); p_graph says which items the call may complete (a contract's own rows, or the others);
-- p_results[i] is request i's result (NULL: none); p_by_kinds/ids/tokens[i] is who made the
-- change, recorded on its events (an override `done` acts on an item another session owns).
-- Steps: lock `events` (src/events/events.repo.ts); one guarded UPDATE of the items; then, with a
-- fresh snapshot (READ COMMITTED, so edges committed while the UPDATE waited are seen), the
-- dependents locked in id order lose one unfinished dependency per completed item, and the
-- `done` and `unblocked` events follow in request order.
-- Returns one row per request, in order: the completed row, or a row of NULLs when the guard did
-- not match (the caller then says why).
CREATE OR REPLACE FUNCTION coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms float8, p_emit text, p_graph boolean, p_results jsonb[],
                                p_by_kinds text[], p_by_ids text[], p_by_tokens text[])
RETURNS SETOF todos LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$  -- see coord_next_many
DECLARE
  done_ids text[];
  done_ords bigint[];
  flipped int;
BEGIN
  -- An event writer locks `events` before its transaction id exists (src/events/events.repo.ts):
  -- the update below takes one, and a reader passes over an id whose holder holds no such lock.
  LOCK TABLE events IN ROW EXCLUSIVE MODE;
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
      RETURNING t.id, t.team_id, t.scope, t.status, t.unfinished_deps, t.revision, k.ord),
    ev AS (
      INSERT INTO events (team_id, topic, event, subject_id, payload, actor_kind, actor_id, actor_token)
      SELECT x.team_id, x.topic, x.event, x.subject_id, x.payload, p_by_kinds[x.ord], p_by_ids[x.ord], p_by_tokens[x.ord] FROM (
        SELECT d.ord, 0 AS kind, t.team_id, t.id AS subject_id, 'todo:' || t.scope AS topic, 'done' AS event, t.scope,
               jsonb_strip_nulls(jsonb_build_object('event', 'done', 'id', t.id, 'scope', t.scope, 'status', 'done',
                 'revision', t.revision, 'owner', t.owner,
                 'blockedBy', CASE WHEN t.unfinished_deps > 0 THEN to_jsonb(nullif(coord_blocked_by(t.id), '{}')) END))
                 || CASE WHEN t.result IS NOT NULL THEN jsonb_build_object('result', t.result) ELSE '{}'::jsonb END AS payload
          FROM d JOIN todos t ON t.id = d.id AND t.id = ANY (done_ids)
        UNION ALL
        SELECT u.ord, 1, u.team_id, u.id, 'todo:' || u.scope, 'unblocked', u.scope,
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
