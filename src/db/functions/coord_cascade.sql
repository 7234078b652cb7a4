-- coord_cascade: after p_dependency became done (p_delta = -1) or stopped being done (+1), adjust
-- its dependents' unfinished_deps, locking them in id order (seed 000: readiness is derived from
-- the dependencies; seed 001: a metagit node is ready when its dependencies are complete).
-- Returns the dependents whose readiness flipped (-1: a stored todo reaching 0, unblocked; +1: a
-- stored todo leaving 0, dependency-blocked); only those get a revision bump. VOLATILE: runs with
-- a fresh snapshot, so it sees an edge that committed while the caller waited for a row lock.
-- Called through `cascade` of src/todos/todos.repo.ts, with +1 when a done item is moved back (a
-- todo reopen, a metagit node reopened); `done` cascades inside
-- coord_done_many instead.
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
