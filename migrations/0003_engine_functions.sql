-- The engine's hot path and its one readiness derivation, as SQL functions.
--
-- 1. NOTIFY moves out of the writing transaction. A transaction that NOTIFYs takes Postgres's
--    cluster-wide notify lock at commit, which serialised every claim and completion (measured:
--    half the claim cycle's throughput). Writers now ring a coalesced doorbell after commit
--    (src/events/doorbell.ts); the poll backstop covers a ring lost to a crash.
DROP TRIGGER IF EXISTS events_notify ON events;
--> statement-breakpoint
DROP FUNCTION IF EXISTS coord_events_notify();
--> statement-breakpoint
-- 2. Every dependency id of an item, and the unfinished ones (blockedBy), sorted. The only
--    definition of "unfinished" (status <> 'done'); every item read selects these.
CREATE OR REPLACE FUNCTION coord_depends_on(p_id text) RETURNS text[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(e.dependency_id ORDER BY e.dependency_id), '{}')
    FROM todo_dependencies e WHERE e.todo_id = p_id
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION coord_blocked_by(p_id text) RETURNS text[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(e.dependency_id ORDER BY e.dependency_id), '{}')
    FROM todo_dependencies e JOIN todos d ON d.id = e.dependency_id
   WHERE e.todo_id = p_id AND d.status <> 'done'
$$;
--> statement-breakpoint
-- 3. The cascade: after `p_dependency` became done (p_delta = -1) or stopped being done (+1),
--    adjust its dependents' unfinished_deps, locking them in id order. Returns the dependents whose
--    readiness flipped (-1: stored todo reaching 0 = unblocked; +1: stored todo leaving 0 =
--    dependency-blocked); only those get a revision bump. VOLATILE: runs with a fresh snapshot, so
--    it sees an edge that committed while the caller waited for the dependency's row lock.
CREATE OR REPLACE FUNCTION coord_cascade(p_dependency text, p_delta int) RETURNS SETOF text LANGUAGE sql VOLATILE AS $$
  WITH d AS (
    SELECT t.id FROM todos t JOIN todo_dependencies e ON e.todo_id = t.id
     WHERE e.dependency_id = p_dependency ORDER BY t.id FOR UPDATE OF t),
  u AS (
    UPDATE todos t
       SET unfinished_deps = t.unfinished_deps + p_delta,
           revision = t.revision + CASE WHEN t.status = 'todo' AND t.unfinished_deps + p_delta = (CASE WHEN p_delta < 0 THEN 0 ELSE 1 END) THEN 1 ELSE 0 END,
           updated_at = CASE WHEN t.status = 'todo' AND t.unfinished_deps + p_delta = (CASE WHEN p_delta < 0 THEN 0 ELSE 1 END) THEN now() ELSE t.updated_at END
      FROM d WHERE t.id = d.id
    RETURNING t.id, t.status, t.unfinished_deps)
  SELECT id FROM u
   WHERE status = 'todo' AND unfinished_deps = (CASE WHEN p_delta < 0 THEN 0 ELSE 1 END)
   ORDER BY id
$$;
--> statement-breakpoint
-- 4. `done` in one round trip (seed 000: from in-progress or blocked; owner kept; the cascade and
--    the events in the same transaction). The guard is the transition's: pre-state, and the
--    caller is the owner unless p_override; an owner whose lease expired is refused. Each
--    statement of this VOLATILE function takes a fresh snapshot (READ COMMITTED), so the cascade
--    sees edges committed while the UPDATE waited. Returns the completed row, or no row when the
--    guard did not match (the caller then says why).
CREATE OR REPLACE FUNCTION coord_done(p_id text, p_actor text, p_override boolean, p_lease_ms float8, p_emit text)
RETURNS SETOF todos LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r todos;
  flipped text[];
  blocked text[];
BEGIN
  UPDATE todos t SET status = 'done', revision = t.revision + 1, updated_at = now(), progress_at = NULL
   WHERE t.id = p_id AND t.status IN ('in-progress', 'blocked')
     AND (p_override OR t.owner = p_actor)
     AND NOT (t.owner IS NOT DISTINCT FROM p_actor AND t.status = 'in-progress' AND p_lease_ms > 0
              AND t.progress_at + make_interval(secs => p_lease_ms / 1000) <= now())
  RETURNING * INTO r;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT coalesce(array_agg(x), '{}') INTO flipped FROM coord_cascade(p_id, -1) x;
  IF p_emit = 'all' OR (p_emit = 'scenario' AND r.scope LIKE 'scenario:%') THEN
    blocked := coord_blocked_by(r.id);
    INSERT INTO events (topic, event, subject_id, payload)
    VALUES ('todo:' || r.scope, 'done', r.id,
            jsonb_strip_nulls(jsonb_build_object('event', 'done', 'id', r.id, 'scope', r.scope, 'status', 'done',
              'revision', r.revision, 'owner', r.owner,
              'blockedBy', CASE WHEN cardinality(blocked) > 0 THEN to_jsonb(blocked) END)));
    INSERT INTO events (topic, event, subject_id, payload)
    SELECT 'todo:' || t.scope, 'unblocked', t.id,
           jsonb_build_object('event', 'unblocked', 'id', t.id, 'scope', t.scope, 'status', 'todo', 'revision', t.revision)
      FROM todos t WHERE t.id = ANY (flipped) ORDER BY t.id;
  END IF;
  RETURN NEXT r;
END;
$$;
