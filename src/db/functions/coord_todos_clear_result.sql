-- coord_todos_clear_result: trigger function of todos_clear_result (on todos): an item that leaves
-- `done` loses its result (it is no longer done), whoever moves it back (reopen in
-- src/todos/todos.repo.ts, or any other writer). The trigger's WHEN clause keeps every other
-- update free of the call. Coord's own rule (results on done), not a seed's.
CREATE OR REPLACE FUNCTION coord_todos_clear_result() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.result := NULL;
  RETURN NEW;
END;
$$;
