import { sql } from 'drizzle-orm';
import { check, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { DEFAULT_TEAM, teams } from './teams.js';

/** Operators ("the human" of the todo seed): override authority everywhere, cannot claim. Their tokens are in `tokens`. */
export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** The operator's team. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
    /** `operator`, or `admin`: the server administrator (the bootstrap operator), who creates teams. */
    role: text('role').notNull().default('operator'),
  },
  (t) => [check('users_role_check', sql`${t.role} in ('operator', 'admin')`)],
);
