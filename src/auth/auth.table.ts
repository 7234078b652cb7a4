import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Operators ("the human" of the todo seed): override authority everywhere, cannot claim. Their tokens are in `tokens`. */
export const users = pgTable('users', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
