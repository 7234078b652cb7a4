import { integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
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
