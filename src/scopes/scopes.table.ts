import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * One row per scope that has ever held an item: the position counter (seed: position = scope
 * max + 1, sub-items share the sequence). The row lock on it serialises adds within one scope only.
 */
export const scopes = pgTable('scopes', {
  scope: text('scope').primaryKey(),
  lastPosition: integer('last_position').notNull().default(0),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
