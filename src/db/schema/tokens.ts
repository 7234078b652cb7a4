import { sql } from 'drizzle-orm';
import { check, index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { users } from './auth.js';
import { sessions } from './sessions.js';

/**
 * Bearer tokens. Each belongs to exactly one principal: an operator (`userId`) or a
 * session (`sessionId`). Only the sha256 of the secret is stored; the secret is shown once, at
 * creation or rotation. A token authenticates while it is not revoked and not past `expiresAt`
 * (compared with the database clock, `now()`), and, for a session, while the session is active.
 * Rows are kept after revocation so that what a token did stays attributable to its name.
 */
export const tokens = pgTable(
  'tokens',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
    sessionId: text('session_id').references(() => sessions.id, { onDelete: 'cascade' }),
    /** Chosen by its owner; unique among the owner's unrevoked tokens. */
    name: text('name').notNull(),
    /** sha256 of the secret, hex. Replaced by a rotation. */
    tokenHash: text('token_hash').notNull().unique(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** Who created it: a user or session id (the owner itself, or an operator). */
    createdBy: text('created_by'),
    /** Last rotation (a new secret for the same token id), or null. */
    rotatedAt: timestamp('rotated_at', { withTimezone: true }),
    /** Refused from this instant on (database clock); null = no expiry. */
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    check('tokens_one_owner_check', sql`(${t.userId} is null) <> (${t.sessionId} is null)`),
    uniqueIndex('tokens_live_name_idx').on(sql`coalesce(${t.userId}, ${t.sessionId})`, t.name).where(sql`${t.revokedAt} is null`),
    index('tokens_user_idx').on(t.userId),
    index('tokens_session_idx').on(t.sessionId),
  ],
);
