import { sql } from 'drizzle-orm';
import { foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { todos } from './todos.js';
import { DEFAULT_TEAM, teams } from './teams.js';

/** Configured Agents (Task Graph v1: implementer, planner and reviewer identities must be configured). */
export const agents = pgTable(
  'agents',
  {
    id: text('id').notNull(),
    adapter: text('adapter'),
    command: text('command'),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** The team whose operator registered it. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.id] })],
);

/**
 * A Task Graph v1 parent task: a container in the one engine whose subtasks are todo rows in
 * scope `graph:<id>` (docs/architecture.md §D1). The contract's own facts live here.
 */
export const graphs = pgTable(
  'graphs',
  {
    /** The parent task id (`task-…`). */
    id: text('id').notNull(),
    scope: text('scope').notNull(),
    /** The normalised parent facts (title, planner, reviewer, optional spec/implementer). */
    parent: jsonb('parent').notNull(),
    maxConcurrency: integer('max_concurrency').notNull(),
    /** The normalised Intent Map v1, or null when none was supplied. */
    intentMap: jsonb('intent_map'),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    revision: integer('revision').notNull().default(1),
    /** The graph base commit fixed by the first run (40 or 64 lower-case hex), or null before it. */
    baseCommit: text('base_commit'),
    /** The integration record the runner reported (PUT /v1/graphs/{id}/integration), or null. */
    integration: jsonb('integration'),
    /** The latest review decision (REVIEW_APPROVED / CHANGES_REQUESTED), or null. */
    review: jsonb('review'),
    /** The team of its creator. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.id] }), unique('graphs_team_scope_unique').on(t.teamId, t.scope)],
);

/**
 * A subtask's contract facts beside its engine row (`todoId`). Its READY/WAITING/RUNNING/
 * SUCCEEDED view is derived from the todo row; `outcome` holds the contract's terminal
 * classification that the todo state machine has no word for (FAILED, BLOCKED, STOPPED) with a
 * bounded `reason`; `evidence` holds the verified IMPLEMENTATION_DONE evidence of the current attempt.
 */
export const graphSubtasks = pgTable(
  'graph_subtasks',
  {
    /** The graph's team: graph ids are unique per team. */
    teamId: text('team_id').notNull().default(DEFAULT_TEAM),
    graphId: text('graph_id').notNull(),
    subtaskId: text('subtask_id').notNull(),
    todoId: text('todo_id')
      .notNull()
      .unique()
      .references(() => todos.id, { onDelete: 'cascade' }),
    implementer: text('implementer').notNull(),
    title: text('title'),
    spec: text('spec').notNull(),
    dependsOn: text('depends_on').array().notNull().default(sql`'{}'::text[]`),
    outcome: text('outcome'),
    reason: jsonb('reason'),
    evidence: jsonb('evidence'),
    /** Dispatches so far (0 before the first); each run or claim of this subtask adds one. */
    attempt: integer('attempt').notNull().default(0),
    /** The current (latest) dispatch: its own session, the caller that dispatched it, when. */
    sessionId: text('session_id'),
    dispatchedBy: text('dispatched_by'),
    dispatchedAt: timestamp('dispatched_at', { withTimezone: true }),
    /** The verified implementation commit of IMPLEMENTATION_DONE evidence. */
    implementationCommit: text('implementation_commit'),
    /** Scope Audit v1 evidence (graphs with an Intent Map only). */
    scopeEvidence: jsonb('scope_evidence'),
    /** The last runtime error `{code, message, stage, recoverable, classification, …}`. */
    lastError: jsonb('last_error'),
    /** The runner's last cleanup outcome `{status: CLEANED|FAILED|SKIPPED, …}`. */
    cleanup: jsonb('cleanup'),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.graphId, t.subtaskId] }),
    foreignKey({ columns: [t.teamId, t.graphId], foreignColumns: [graphs.teamId, graphs.id] }).onDelete('cascade'),
    // Ended subtasks (FAILED, STOPPED, BLOCKED) by age: the attention list and the work gauges.
    index('graph_subtasks_outcome_idx').on(t.teamId, t.updatedAt).where(sql`${t.outcome} is not null`),
  ],
);
