-- coord_next_many: `next` (seed 000: the lowest-ordered eligible item of a scope, claimed by the
-- caller) for a batch of actors, as if their requests ran one after another in arrival order.
-- Called by `claimNextMany` of src/todos/todos.repo.ts for the `next` lane of the group commit
-- (src/todos/todos.batch.ts): one call, one round trip and one commit for every `next` that queued
-- up while a batch ran.
--
-- Arguments: p_team and p_scope name the list; p_actors[i] is request i's session; p_emit writes
-- the events; p_lease_ms is the scope's claim lease in ms (0 = none); the filters every request
-- of a batch shares (p_min_priority, NULL = none; p_tags_all, every tag, NULL or '{}' = none;
-- p_tags_any, at least one; p_assigned_only, only items reserved for the actor); p_tokens[i] is
-- the name of the token request i authenticated with (recorded on its events).
-- Steps:
--   0. Lock `events` first (src/events/events.repo.ts: an event writer takes it before its
--      transaction id exists), then the actors' session rows FOR SHARE, keeping the active ones:
--      a stopped actor claims nothing.
--   1. Lock the first n eligible rows (FOR UPDATE SKIP LOCKED): ready, unowned items not reserved
--      for another assignee, and, in plain scopes only, claims whose lease expired (take-over;
--      a `graph:` or `metagit:` item is never taken over). Order: priority DESC, then the seed's
--      (position, id).
--   2. Match them to the actors in order: each takes the first untaken row it may claim.
--   3. Claim the matched rows with the lone claim's guard, writing `todo` (reason lease-expired)
--      before `claimed` for a take-over (revision + 2) and `claimed` otherwise (revision + 1).
-- Returns one row per actor, in order: (the claimed row, false) or (NULL, retry); retry is true
-- when the locked rows ran out for this live actor although some were found, so the caller runs
-- its `next` alone. docs/architecture.md "Group commit" says why the batch means what the
-- requests mean one by one.
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
$$;
