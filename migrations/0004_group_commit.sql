-- Group commit for the claim cycle (src/db/group-commit.ts). When many agents call `next` or
-- `done` at once, each replica sends the requests that queued up while its previous batch ran as
-- one call of these functions: one round trip, one transaction, one commit for the whole batch.
-- A batch means what its requests mean run one after another in arrival order (a lone `next` /
-- `done`), worked out set-based as each function below says. Every request's change and its
-- events commit together; the batch commits whole or not at all (when Postgres refused it, the
-- caller retries each request alone, so one failing request never fails another).
--
-- coord_next_many: `next` (seed 000) for each actor in order, as if run one after another: each
-- gets the lowest (position, id) ready, unowned item of p_scope not reserved for another
-- assignee, skipping rows other claimers hold. One snapshot decides readiness for the whole batch
-- (statement 1), taken before the transaction writes anything: every dependency the batch saw
-- done committed before this transaction's id was assigned, so the event order (by transaction
-- id) never shows a claim before the completion that made it possible.
--   0. Lock the actors' session rows FOR SHARE, keeping only the active ones: a stop updates that
--      row before it reopens what the session owns, so a claim never lands after the reopen
--      (src/todos/todos.batch.ts `liveSession`). A stopped actor claims nothing.
--   1. Lock the first n rows eligible for any of the live actors (FOR UPDATE SKIP LOCKED).
--   2. Match them to the actors in order: each takes the first untaken row it may claim.
--   3. Claim the matched rows (the same guarded UPDATE as a lone claim) with their events.
-- Returns one row per actor, in order: (the claimed row, its dependency ids, false), or
-- (NULL, NULL, retry). retry is true when the locked rows ran out for this live actor although
-- some were found: more eligible rows may lie beyond them, so the caller runs its `next` alone.
CREATE OR REPLACE FUNCTION coord_next_many(p_scope text, p_actors text[], p_emit boolean)
RETURNS TABLE (o_item todos, o_depends_on text[], o_retry boolean) LANGUAGE plpgsql VOLATILE
-- Plan each statement once per connection: custom plans for array parameters were re-made on
-- every call (measured: ~15 % of Postgres CPU per claim cycle); every statement here has one
-- right plan (the ready index, primary keys, the dependency index) whatever the arrays hold.
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
  SELECT c.claimed, CASE WHEN c.ord IS NOT NULL THEN coord_depends_on((c.claimed).id) END,
         (c.ord IS NULL AND k > 0 AND p_actors[q.ord] = ANY (live))
    FROM generate_series(1, n) q(ord) LEFT JOIN c ON c.ord = q.ord
   ORDER BY q.ord;
END;
$$;
--> statement-breakpoint
-- coord_done_many: `done` (seed 000: from in-progress or blocked; owner kept; the cascade and the
-- events in the same transaction) for each (id, actor) pair of a batch, set-based:
--   1. One guarded UPDATE of the items: the pre-state, and the caller is the owner unless
--      p_override; an owner whose lease expired is refused.
--   2. A fresh snapshot (next statement of this VOLATILE function, READ COMMITTED), so the cascade
--      sees every edge committed while step 1 waited for a row lock: the dependents of the
--      completed items, locked in id order, lose one unfinished dependency per completed item;
--      a stored todo that reaches 0 is unblocked (revision bump). The `done` events and the
--      `unblocked` events follow in request order (each `unblocked` after the last of its
--      dependencies in the batch), as if the requests had run one after another.
-- Returns one row per pair, in order: the completed row, or a row of NULLs when the guard did not
-- match (the caller then says why). p_ids must be distinct. Replaces coord_done (dropped below).
CREATE OR REPLACE FUNCTION coord_done_many(p_ids text[], p_actors text[], p_override boolean, p_lease_ms float8, p_emit text)
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
--> statement-breakpoint
-- coord_done (migrations/0003) is replaced by coord_done_many: a single `done` is a batch of one.
DROP FUNCTION IF EXISTS coord_done(text, text, boolean, float8, text);
