-- Lease take-over (issue 18): from its deadline on, an expired claim is free. `next` takes it as
-- it takes a ready item, in (position, id) order with them, and the take-over reopens and claims
-- it in the same statement, writing both events: `todo` (reason lease-expired, formerOwner; what
-- the lease sweep would have written) and then `claimed`. Revision moves by 2, one per event.
-- An expired claim is free only in plain scopes: a Task Graph v1 dispatch (`graph:`) or a
-- metagit node (`metagit:`) that outlives its lease is FAILED `interrupted` / left to its
-- contract, never taken over (design brief §8). The candidates stay behind `FOR UPDATE SKIP
-- LOCKED`; the expired ones come from todos_in_progress_idx (progress_at), a range that is empty
-- on a healthy fleet, so the hot path pays one empty index probe.
-- This is coord_next_many with a fourth argument, p_lease_ms (`claim_lease` in ms, 0 = no
-- lease). The three-argument version (0005) is kept, unchanged, so a replica still running the
-- previous release keeps working during a rolling upgrade (README "Upgrades"); a later migration
-- drops it.
CREATE OR REPLACE FUNCTION coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms float8)
RETURNS TABLE (o_item todos, o_retry boolean) LANGUAGE plpgsql VOLATILE
-- Plan each statement once per connection (see 0004).
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
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  SELECT coalesce(array_agg(s.id), '{}') INTO live
    FROM (SELECT id FROM sessions WHERE id = ANY (p_actors) AND status = 'active' ORDER BY id FOR SHARE) s;
  -- Up to n ready items and up to n expired claims, each set locked SKIP LOCKED, merged in
  -- (position, id) order; `former` is the expired claim's owner (NULL for a ready item).
  SELECT coalesce(array_agg(c.id ORDER BY c.position, c.id), '{}'),
         coalesce(array_agg(c.assignee ORDER BY c.position, c.id), '{}'),
         coalesce(array_agg(c.former ORDER BY c.position, c.id), '{}')
    INTO cand_ids, cand_assignees, cand_formers
    FROM (WITH ready AS (
            SELECT t.id, t.assignee, t.position, NULL::text AS former FROM todos t
             WHERE t.scope = p_scope AND t.status = 'todo' AND t.owner IS NULL AND t.unfinished_deps = 0
               AND (t.assignee IS NULL OR t.assignee = ANY (live))
               AND cardinality(live) > 0
             ORDER BY t.position, t.id
             LIMIT n
             FOR UPDATE SKIP LOCKED),
          expired AS (
            SELECT t.id, t.assignee, t.position, t.owner AS former FROM todos t
             WHERE takes_over AND t.status = 'in-progress'
               AND t.progress_at <= now() - make_interval(secs => p_lease_ms / 1000)
               AND t.scope = p_scope AND t.unfinished_deps = 0
               AND (t.assignee IS NULL OR t.assignee = ANY (live))
               AND cardinality(live) > 0
             ORDER BY t.position, t.id
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
      IF NOT taken[j] AND (cand_assignees[j] IS NULL OR cand_assignees[j] = p_actors[i]) THEN
        taken[j] := true;
        matched[i] := cand_ids[j];
        formers[i] := cand_formers[j];
        EXIT;
      END IF;
    END LOOP;
  END LOOP;
  -- The rows are found by primary key (`id = ANY`); the position of each in `matched` is its
  -- request, and so its actor. The rows are locked, so `formers` still names their owners.
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
    INSERT INTO events (topic, event, subject_id, payload)
    SELECT 'todo:' || (c.claimed).scope, e.event, (c.claimed).id, e.payload
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
