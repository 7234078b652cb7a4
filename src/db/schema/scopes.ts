import { index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { DEFAULT_TEAM, teams } from './teams.js';

/**
 * One row per scope that has ever held an item: the position counter (seed: position = scope
 * max + 1, sub-items share the sequence). The row lock on it serialises adds within one scope only.
 */
export const scopes = pgTable(
  'scopes',
  {
    scope: text('scope').notNull(),
    lastPosition: integer('last_position').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** The team of the scope's container (its root session, scenario or graph). */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.scope] })],
);

/**
 * Per-scope item counts by stored status, kept as deltas so no write waits on another: a
 * statement-level trigger on `todos` (src/db/functions/coord_scope_counts.sql) inserts one row per
 * scope a statement changed, in the change's transaction; a scope's counts are the sums of its
 * rows. The sweep's `scope-counts` step folds each scope's rows into one (`foldScopeCounts`, src/scopes/scopes.counts.ts), so a
 * read sums at most the rows written since the last tick. Read by `GET /v1/scopes`, scenarios and
 * session progress (`scopeCountsSql`): the counts of a 1,000,000-item scope without counting it.
 */
export const scopeCounts = pgTable(
  'scope_counts',
  {
    teamId: text('team_id').notNull(),
    scope: text('scope').notNull(),
    /** Items, sub-items included. */
    total: integer('total').notNull(),
    todo: integer('todo').notNull(),
    inProgress: integer('in_progress').notNull(),
    blocked: integer('blocked').notNull(),
    done: integer('done').notNull(),
    /** Stored `todo` items with an unfinished dependency: a subset of `todo` (ready = todo - waiting). */
    waiting: integer('waiting').notNull().default(0),
  },
  (t) => [index('scope_counts_scope_idx').on(t.teamId, t.scope)],
);
