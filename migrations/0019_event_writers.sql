-- Events wait only for transactions that can still write one (issue 34 #2). A reader's horizon
-- (src/events/events.repo.ts, HORIZON) passes over a running transaction that holds no lock on
-- `events`, so every event writer must take that lock before its transaction id exists. A
-- statement that inserts into `events` does; the two claim functions write rows first and events
-- later, so they now lock `events` first. Otherwise as migrations/0018.
CREATE OR REPLACE FUNCTION coord_next_many(p_team text, p_scope text, p_actors text[], p_emit boolean, p_lease_ms float8,
                                p_min_priority int, p_tags_all text[], p_tags_any text[], p_assigned_only boolean,
                                p_tokens text[])
RETURNS TABLE (o_item todos, o_retry boolean) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  n int := coalesce(array_length(p_actors, 1), 0);
  live text[];
  cand_ids text[];
  cand_assignees text[];
  cand_formers text[];
  k int;
  taken boolean[];
  matched text[];
  formers text[];
  i int;
  j int;
  takes_over boolean := p_lease_ms > 0 AND p_scope NOT LIKE 'graph:%' AND p_scope NOT LIKE 'metagit:%';
  no_all boolean := coalesce(cardinality(p_tags_all), 0) = 0;
  no_any boolean := coalesce(cardinality(p_tags_any), 0) = 0;
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  -- An event writer locks `events` before its transaction id exists (src/events/events.repo.ts):
  -- the row locks below take one, and a reader passes over an id whose holder holds no such lock.
  LOCK TABLE events IN ROW EXCLUSIVE MODE;
  SELECT coalesce(array_agg(s.id), '{}') INTO live
    FROM (SELECT id FROM sessions WHERE id = ANY (p_actors) AND status = 'active' ORDER BY id FOR SHARE) s;
  SELECT coalesce(array_agg(c.id ORDER BY c.priority DESC, c.position, c.id), '{}'),
         coalesce(array_agg(c.assignee ORDER BY c.priority DESC, c.position, c.id), '{}'),
         coalesce(array_agg(c.former ORDER BY c.priority DESC, c.position, c.id), '{}')
    INTO cand_ids, cand_assignees, cand_formers
    FROM (WITH ready AS (
            SELECT t.id, t.assignee, t.priority, t.position, NULL::text AS former FROM todos t
             WHERE t.team_id = p_team AND t.scope = p_scope AND t.status = 'todo' AND t.owner IS NULL AND t.unfinished_deps = 0
               AND (t.assignee IS NULL OR t.assignee = ANY (live))
               AND (p_min_priority IS NULL OR t.priority >= p_min_priority)
               AND (no_all OR t.tags @> p_tags_all)
               AND (no_any OR t.tags && p_tags_any)
               AND (NOT p_assigned_only OR t.assignee IS NOT NULL)
               AND cardinality(live) > 0
             ORDER BY t.priority DESC, t.position, t.id
             LIMIT n
             FOR UPDATE SKIP LOCKED),
          expired AS (
            SELECT t.id, t.assignee, t.priority, t.position, t.owner AS former FROM todos t
             WHERE takes_over AND t.status = 'in-progress'
               AND t.progress_at <= now() - make_interval(secs => p_lease_ms / 1000)
               AND t.team_id = p_team AND t.scope = p_scope AND t.unfinished_deps = 0
               AND (t.assignee IS NULL OR t.assignee = ANY (live))
               AND (p_min_priority IS NULL OR t.priority >= p_min_priority)
               AND (no_all OR t.tags @> p_tags_all)
               AND (no_any OR t.tags && p_tags_any)
               AND (NOT p_assigned_only OR t.assignee IS NOT NULL)
               AND cardinality(live) > 0
             ORDER BY t.priority DESC, t.position, t.id
             LIMIT n
             FOR UPDATE SKIP LOCKED)
          SELECT * FROM ready UNION ALL SELECT * FROM expired) c;
  k := cardinality(cand_ids);
  taken := array_fill(false, ARRAY[k]);
  matched := array_fill(NULL::text, ARRAY[n]);
  formers := array_fill(NULL::text, ARRAY[n]);
  FOR i IN 1 .. n LOOP
    CONTINUE WHEN NOT (p_actors[i] = ANY (live));
    FOR j IN 1 .. k LOOP
      IF NOT taken[j] AND (CASE WHEN p_assigned_only THEN cand_assignees[j] = p_actors[i]
                                ELSE cand_assignees[j] IS NULL OR cand_assignees[j] = p_actors[i] END) THEN
        taken[j] := true;
        matched[i] := cand_ids[j];
        formers[i] := cand_formers[j];
        EXIT;
      END IF;
    END LOOP;
  END LOOP;
  RETURN QUERY
  WITH c AS (
    UPDATE todos t SET status = 'in-progress', owner = p_actors[array_position(matched, t.id)],
                       revision = t.revision + CASE WHEN t.status = 'in-progress' THEN 2 ELSE 1 END,
                       updated_at = now(), progress_at = now()
     WHERE t.id = ANY (matched) AND t.unfinished_deps = 0
       AND ((t.status = 'todo' AND t.owner IS NULL)
            OR (takes_over AND t.status = 'in-progress'
                AND t.progress_at <= now() - make_interval(secs => p_lease_ms / 1000)))
    RETURNING t AS claimed, array_position(matched, t.id) AS ord),
  ev AS (
    INSERT INTO events (team_id, topic, event, subject_id, payload, actor_kind, actor_id, actor_token)
    SELECT (c.claimed).team_id, 'todo:' || (c.claimed).scope, e.event, (c.claimed).id, e.payload,
           'session', p_actors[c.ord], p_tokens[c.ord]
      FROM c CROSS JOIN LATERAL (
        SELECT 1 AS step, 'todo' AS event,
               jsonb_build_object('event', 'todo', 'id', (c.claimed).id, 'scope', (c.claimed).scope, 'status', 'todo',
                                  'revision', (c.claimed).revision - 1, 'reason', 'lease-expired',
                                  'formerOwner', formers[c.ord]) AS payload
         WHERE formers[c.ord] IS NOT NULL
        UNION ALL
        SELECT 2, 'claimed',
               jsonb_build_object('event', 'claimed', 'id', (c.claimed).id, 'scope', (c.claimed).scope,
                                  'status', 'in-progress', 'owner', (c.claimed).owner, 'revision', (c.claimed).revision)) e
     WHERE p_emit ORDER BY c.ord, e.step)
  SELECT c.claimed, (c.ord IS NULL AND k > 0 AND p_actors[q.ord] = ANY (live))
    FROM generate_series(1, n) q(ord) LEFT JOIN c ON c.ord = q.ord
   ORDER BY q.ord;
END;
$$;--> statement-breakpoint
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
