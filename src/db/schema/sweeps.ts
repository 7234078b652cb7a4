import { doublePrecision, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The fleet's sweep health (defect #9): one row per sweep step (`lease`, `retention`, …), upserted
 * by whichever replica ran the tick. The sweep is a pg-boss job that runs on one replica per tick,
 * so per-process memory cannot tell a replica whether *some* replica swept lately; this table can,
 * and every replica's `/readyz` and `/metrics` read it. Times come from the database clock.
 */
export const sweepRuns = pgTable('sweep_runs', {
  /** The step's name: `session-liveness`, `lease`, `graph-interruptions`, `metagit-stranded`, `retention`, `event-retention`, `scenario-completion`, `idempotency-keys`, `scope-counts`. */
  sweep: text('sweep').primaryKey(),
  /** When the step last finished without an error (database time); null until it has. */
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
  /** How long that successful run took, in milliseconds. */
  durationMs: doublePrecision('duration_ms'),
  /** What that run changed: rows reopened, recorded, deleted or completed (see docs/operations.md). */
  changed: integer('changed'),
  /** When the step last failed (database time); null when it never has. */
  lastFailureAt: timestamp('last_failure_at', { withTimezone: true }),
});
