-- Issue 19: item priority and `next` filters.
--
-- `priority` is a small integer (higher is claimed first, default 0). `next` takes the ready item
-- with the highest priority, then the seed's (position, id) order; with every priority 0 that is
-- the seed's order unchanged. The ready index leads with it, so an unfiltered `next` stays one
-- probe of the index whatever the backlog size.
ALTER TABLE "todos" ADD COLUMN "priority" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
DROP INDEX IF EXISTS "todos_ready_idx";--> statement-breakpoint
CREATE INDEX "todos_ready_idx" ON "todos" USING btree ("scope", "priority" DESC, "position", "id")
  WHERE "todos"."status" = 'todo' and "todos"."owner" is null and "todos"."unfinished_deps" = 0;--> statement-breakpoint

-- coord_next_many with the filters of `next` (every request of a batch shares them: the batch key
-- includes them): p_min_priority (NULL = none), p_tags_all (the item carries every one; NULL or
-- '{}' = none), p_tags_any (at least one; NULL or '{}' = none), p_assigned_only (only items whose
-- assignee is the actor). Order: priority DESC, position, id, for ready items and expired claims
-- alike. Otherwise the 0009 function, unchanged.
CREATE OR REPLACE FUNCTION coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms float8,
                                           p_min_priority int, p_tags_all text[], p_tags_any text[], p_assigned_only boolean)
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
  SELECT coalesce(array_agg(s.id), '{}') INTO live
    FROM (SELECT id FROM sessions WHERE id = ANY (p_actors) AND status = 'active' ORDER BY id FOR SHARE) s;
  SELECT coalesce(array_agg(c.id ORDER BY c.priority DESC, c.position, c.id), '{}'),
         coalesce(array_agg(c.assignee ORDER BY c.priority DESC, c.position, c.id), '{}'),
         coalesce(array_agg(c.former ORDER BY c.priority DESC, c.position, c.id), '{}')
    INTO cand_ids, cand_assignees, cand_formers
    FROM (WITH ready AS (
            SELECT t.id, t.assignee, t.priority, t.position, NULL::text AS former FROM todos t
             WHERE t.scope = p_scope AND t.status = 'todo' AND t.owner IS NULL AND t.unfinished_deps = 0
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
               AND t.scope = p_scope AND t.unfinished_deps = 0
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
$$;--> statement-breakpoint

-- The 0009 signature, kept for a replica of the previous release during a rolling upgrade: it now
-- means the same as the unfiltered call above (so it honours priority too).
CREATE OR REPLACE FUNCTION coord_next_many(p_scope text, p_actors text[], p_emit boolean, p_lease_ms float8)
RETURNS TABLE (o_item todos, o_retry boolean) LANGUAGE sql VOLATILE AS $$
  SELECT * FROM coord_next_many(p_scope, p_actors, p_emit, p_lease_ms, NULL::int, NULL::text[], NULL::text[], false);
$$;
