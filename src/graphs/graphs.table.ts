import { sql } from 'drizzle-orm';
import { integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { todos } from '../todos/todos.table.js';

/** Configured Agents (Task Graph v1: implementer, planner and reviewer identities must be configured). */
export const agents = pgTable('agents', {
  id: text('id').primaryKey(),
  adapter: text('adapter'),
  command: text('command'),
  createdBy: text('created_by').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * A Task Graph v1 parent task: a container in the one engine whose subtasks are todo rows in
 * scope `graph:<id>` (design brief §1). The contract's own facts live here.
 */
export const graphs = pgTable('graphs', {
  /** The parent task id (`task-…`). */
  id: text('id').primaryKey(),
  scope: text('scope').notNull().unique(),
  /** The normalised parent facts (title, planner, reviewer, optional spec/implementer). */
  parent: jsonb('parent').notNull(),
  maxConcurrency: integer('max_concurrency').notNull(),
  /** The normalised Intent Map v1, or null when none was supplied. */
  intentMap: jsonb('intent_map'),
  createdBy: text('created_by').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  revision: integer('revision').notNull().default(1),
});

/**
 * A subtask's contract facts beside its engine row (`todoId`). Its READY/WAITING/RUNNING/
 * SUCCEEDED view is derived from the todo row; `outcome` holds the contract's terminal
 * classification that the todo state machine has no word for (FAILED, BLOCKED, STOPPED) with a
 * bounded `reason`; `evidence` is reserved for execution (run, audit, recovery).
 */
export const graphSubtasks = pgTable(
  'graph_subtasks',
  {
    graphId: text('graph_id')
      .notNull()
      .references(() => graphs.id, { onDelete: 'cascade' }),
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
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.graphId, t.subtaskId] })],
);
