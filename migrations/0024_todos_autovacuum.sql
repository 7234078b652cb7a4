-- Autovacuum for `todos` by a count of dead rows, not by a share of the table. Every claim leaves a
-- dead entry at the head of the ready indexes (the claimed row is no longer ready) and every cycle
-- two dead row versions; until a vacuum removes them, each `next` reads past them: a lone pick read
-- 27 buffers fresh and 58–60 after 3,200 claims, and 27–31 again after a VACUUM
-- (test/todos/claim-plan.test.ts's set-up, 20,000 ready items). With the default scale factor
-- (20 % of the table) a busy table waits far too long; here a vacuum is due after 2,000 dead rows
-- (about 1,000 claim cycles), at full speed (no cost delay). How soon autovacuum looks is the
-- server's `autovacuum_naptime` (default 1 min): the embedded Postgres and docker-compose.yml set
-- 5 s, and docs/operations.md says what to set on a managed Postgres.
ALTER TABLE "todos" SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
