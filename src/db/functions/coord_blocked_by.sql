-- coord_blocked_by: the unfinished dependencies of item p_id (those not `done`), sorted by id:
-- the item's `blockedBy` (seed 000: an item is ready only when every dependency is done). The
-- only definition of "unfinished" the reads use.
-- Called by src/todos/todos.view.ts (BLOCKED_BY_SQL, in every item read that needs it) and by
-- coord_done_many (the `blockedBy` of a `done` event). STABLE: reads only.
CREATE OR REPLACE FUNCTION coord_blocked_by(p_id text) RETURNS text[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(e.dependency_id ORDER BY e.dependency_id), '{}')
    FROM todo_dependencies e JOIN todos d ON d.id = e.dependency_id
   WHERE e.todo_id = p_id AND d.status <> 'done'
$$;
