import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Operators ("the human" of the todo seed): override authority everywhere, cannot claim. */
export const users = pgTable('users', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** sha256 of the bearer token, hex. Tokens are random 256-bit values, shown once. */
  tokenHash: text('token_hash').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
