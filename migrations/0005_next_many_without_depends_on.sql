-- coord_next_many without its dependency-id column. 0004 computed each claimed row's
-- dependency ids with coord_depends_on, one SQL-function call per row (Postgres does not inline
-- a SQL function whose body has a subquery); the caller now selects them with an inline subquery
-- (src/todos/todos.view.ts `derivedColumns`), as every item read does. coord_depends_on has no
-- caller left and is dropped. coord_next_many is otherwise unchanged: one row per actor, in
-- order: (the claimed row, false) or (NULL, retry); 0004 says what it does.
DROP FUNCTION IF EXISTS coord_next_many(text, text[], boolean);
--> statement-breakpoint
CREATE OR REPLACE FUNCTION coord_next_many(p_scope text, p_actors text[], p_emit boolean)
RETURNS TABLE (o_item todos, o_retry boolean) LANGUAGE plpgsql VOLATILE
-- Plan each statement once per connection (see 0004).
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  n int := coalesce(array_length(p_actors, 1), 0);
  live text[];
  cand_ids text[];
  cand_assignees text[];
  k int;
  taken boolean[];
  matched text[];
  i int;
  j int;
BEGIN
  IF n = 0 THEN
    RETURN;
  END IF;
  SELECT coalesce(array_agg(s.id), '{}') INTO live
    FROM (SELECT id FROM sessions WHERE id = ANY (p_actors) AND status = 'active' ORDER BY id FOR SHARE) s;
  SELECT coalesce(array_agg(c.id ORDER BY c.position, c.id), '{}'),
         coalesce(array_agg(c.assignee ORDER BY c.position, c.id), '{}')
    INTO cand_ids, cand_assignees
    FROM (SELECT t.id, t.assignee, t.position FROM todos t
           WHERE t.scope = p_scope AND t.status = 'todo' AND t.owner IS NULL AND t.unfinished_deps = 0
             AND (t.assignee IS NULL OR t.assignee = ANY (live))
             AND cardinality(live) > 0
           ORDER BY t.position, t.id
           LIMIT n
           FOR UPDATE SKIP LOCKED) c;
  k := cardinality(cand_ids);
  taken := array_fill(false, ARRAY[k]);
  matched := array_fill(NULL::text, ARRAY[n]);
  FOR i IN 1 .. n LOOP
    CONTINUE WHEN NOT (p_actors[i] = ANY (live));
    FOR j IN 1 .. k LOOP
      IF NOT taken[j] AND (cand_assignees[j] IS NULL OR cand_assignees[j] = p_actors[i]) THEN
        taken[j] := true;
        matched[i] := cand_ids[j];
        EXIT;
      END IF;
    END LOOP;
  END LOOP;
  -- The rows are found by primary key (`id = ANY`); the position of each in `matched` is its
  -- request, and so its actor.
  RETURN QUERY
  WITH c AS (
    UPDATE todos t SET status = 'in-progress', owner = p_actors[array_position(matched, t.id)],
                       revision = t.revision + 1, updated_at = now(), progress_at = now()
     WHERE t.id = ANY (matched) AND t.status = 'todo' AND t.owner IS NULL AND t.unfinished_deps = 0
    RETURNING t AS claimed, array_position(matched, t.id) AS ord),
  ev AS (
    INSERT INTO events (topic, event, subject_id, payload)
    SELECT 'todo:' || (c.claimed).scope, 'claimed', (c.claimed).id,
           jsonb_build_object('event', 'claimed', 'id', (c.claimed).id, 'scope', (c.claimed).scope,
                              'status', 'in-progress', 'owner', (c.claimed).owner, 'revision', (c.claimed).revision)
      FROM c WHERE p_emit ORDER BY c.ord)
  SELECT c.claimed, (c.ord IS NULL AND k > 0 AND p_actors[q.ord] = ANY (live))
    FROM generate_series(1, n) q(ord) LEFT JOIN c ON c.ord = q.ord
   ORDER BY q.ord;
END;
$$;
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_depends_on(text);
