-- coord_todos_claimed_at: trigger function of todos_claimed_at_insert / todos_claimed_at_update
-- (on todos): claimed_at is the start of the current claim, now() when a row enters in-progress
-- or changes owner in it, NULL when it leaves. Every claim path (claim, next and its group commit,
-- lease take-over, graph and metagit starts) sets status and owner, so one trigger keeps the
-- column rather than each path. Read by src/sessions/sessions.holding.ts (what a session holds,
-- and since when). Coord's own rule (session liveness), not a seed's.
CREATE OR REPLACE FUNCTION coord_todos_claimed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.claimed_at := CASE WHEN NEW.status = 'in-progress' THEN now() END;
  RETURN NEW;
END
$$;
