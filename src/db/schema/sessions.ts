import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, text, timestamp, type AnyPgColumn } from 'drizzle-orm/pg-core';
import { DEFAULT_TEAM, teams } from './teams.js';

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
    /**
     * When the session last made an authenticated call (database clock), accurate to about a
     * second: each replica batches the ids it saw and writes them at most once a second
     * (sessions.liveness.ts). Set at creation; null only on sessions created before 0012.
     */
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).defaultNow(),
    /** Auto-stop: a session silent for longer than this many ms is stopped by the sweep; null = never. */
    heartbeatIntervalMs: integer('heartbeat_interval_ms'),
    /** Why it stopped: `requested`, `silent`, `ancestor` or `dispatch-ended`; null while active (and on stops before 0012). */
    stopReason: text('stop_reason'),
    /** The team of the session's creator: an operator's, or its parent session's. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [
    index('sessions_root_idx').on(t.rootId),
    index('sessions_parent_idx').on(t.parentId),
    index('sessions_agent_idx').on(t.agentId).where(sql`${t.agentId} is not null`),
    check('sessions_status_check', sql`${t.status} in ('active', 'stopped', 'deleted')`),
    check('sessions_heartbeat_interval_check', sql`${t.heartbeatIntervalMs} is null or ${t.heartbeatIntervalMs} between 5000 and 86400000`),
    check('sessions_stop_reason_check', sql`${t.stopReason} is null or ${t.stopReason} in ('requested', 'silent', 'ancestor', 'dispatch-ended')`),
    // The auto-stop sweep's candidates: only active sessions with an interval are ever read by it.
    index('sessions_auto_stop_idx').on(t.lastSeenAt).where(sql`${t.status} = 'active' and ${t.heartbeatIntervalMs} is not null`),
  ],
);
