import { sql } from 'drizzle-orm';
import { DEFAULT_TEAM } from './teams.js';
import { bigserial, customType, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const xid8 = customType<{ data: string }>({ dataType: () => 'xid8' });

/**
 * The event outbox: one row per change, written in the change's own transaction.
 * `tx` is the writing transaction's id; readers deliver in `(tx, id)` order and only below the
 * oldest running transaction, which makes resume gap-free (docs/architecture.md "Events").
 */
export const events = pgTable(
  'events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The team whose topic this is: a topic names a stream within one team. */
    teamId: text('team_id').notNull().default(DEFAULT_TEAM),
    topic: text('topic').notNull(),
    event: text('event').notNull(),
    subjectId: text('subject_id'),
    payload: jsonb('payload').notNull(),
    /**
     * Who made the change (the audit): `user` (an operator), `session`, or `system` (a
     * sweep; `actor_id` names it); `actor_token` is the name of the token the request used.
     * NULL on events written before migrations/0016.
     */
    actorKind: text('actor_kind'),
    actorId: text('actor_id'),
    actorToken: text('actor_token'),
    tx: xid8('tx').notNull().default(sql`pg_current_xact_id()`),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('events_team_topic_tx_id_idx').on(t.teamId, t.topic, t.tx, t.id),
    index('events_created_idx').on(t.createdAt),
    // The audit (GET /v1/audit), newest first: the whole log (also by time or actor kind), by actor
    // and by object.
    index('events_tx_id_idx').on(t.tx, t.id),
    index('events_actor_tx_id_idx').on(t.actorId, t.tx, t.id).where(sql`${t.actorId} is not null`),
    index('events_subject_tx_id_idx').on(t.subjectId, t.tx, t.id).where(sql`${t.subjectId} is not null`),
  ],
);
