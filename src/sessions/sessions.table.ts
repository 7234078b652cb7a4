import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, type AnyPgColumn } from 'drizzle-orm/pg-core';

/**
 * Agent sessions. `rootId` is the subtree root, walked once at registration as the todo seed says
 * (stop at no parent, or at a parent with a `systemKind`); parents never change, so it never drifts.
 */
export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    parentId: text('parent_id').references((): AnyPgColumn => sessions.id),
    rootId: text('root_id').notNull(),
    /** Non-null marks a system session (e.g. `orchestrator`): its children anchor to themselves. */
    systemKind: text('system_kind'),
    tokenHash: text('token_hash').notNull().unique(),
    /** `active` | `stopped` | `deleted` (soft delete). Only active sessions authenticate. */
    status: text('status').notNull().default('active'),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    stoppedAt: timestamp('stopped_at', { withTimezone: true }),
    revision: integer('revision').notNull().default(1),
    /** The configured Agent this session acts as (Task Graph v1 implementer/reviewer identity), or null. */
    agentId: text('agent_id'),
    /** Set on a subtask session that a graph dispatch created: the parent task id and subtask id. */
    graphId: text('graph_id'),
    subtaskId: text('subtask_id'),
  },
  (t) => [
    index('sessions_root_idx').on(t.rootId),
    index('sessions_parent_idx').on(t.parentId),
    index('sessions_agent_idx').on(t.agentId).where(sql`${t.agentId} is not null`),
    check('sessions_status_check', sql`${t.status} in ('active', 'stopped', 'deleted')`),
  ],
);
