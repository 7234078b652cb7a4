import { sql } from 'drizzle-orm';
import { foreignKey, integer, jsonb, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { todos } from './todos.js';
import { DEFAULT_TEAM, teams } from './teams.js';

/** A TaskIntent (metagit RFC-0008 §2.1): what a graph, or a node, is for. */
export const metagitIntents = pgTable(
  'metagit_intents',
  {
    id: text('id').notNull(),
    title: text('title').notNull(),
    goal: text('goal').notNull(),
    acceptance: jsonb('acceptance').notNull().default(sql`'[]'::jsonb`),
    project: text('project'),
    repos: jsonb('repos').notNull().default(sql`'[]'::jsonb`),
    objectiveId: text('objective_id'),
    handoffId: text('handoff_id'),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** The team of its creator. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.id] })],
);

/**
 * A metagit TaskGraph: a container in the one engine (docs/architecture.md §D1, §D8) whose nodes are work
 * items in scope `metagit:<id>`. `cancelledAt` marks an explicit graph cancel; completion is derived.
 */
export const metagitGraphs = pgTable(
  'metagit_graphs',
  {
    id: text('id').notNull(),
    scope: text('scope').notNull(),
    title: text('title').notNull(),
    rootIntentId: text('root_intent_id').notNull(),
    objectiveId: text('objective_id'),
    handoffId: text('handoff_id'),
    /** `active` | `completed` | `cancelled`, written whenever a change moves it (derived from the nodes). */
    status: text('status').notNull().default('active'),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    revision: integer('revision').notNull().default(1),
    /** The team of its creator. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.id] }),
    unique('metagit_graphs_team_scope_unique').on(t.teamId, t.scope),
    foreignKey({ columns: [t.teamId, t.rootIntentId], foreignColumns: [metagitIntents.teamId, metagitIntents.id] }),
  ],
);

/** A node's metagit facts beside its engine row (`todoId`); its status is a view (metagit.view.ts). */
export const metagitNodes = pgTable(
  'metagit_nodes',
  {
    /** The graph's team: metagit graph ids are unique per team. */
    teamId: text('team_id').notNull().default(DEFAULT_TEAM),
    graphId: text('graph_id').notNull(),
    nodeId: text('node_id').notNull(),
    todoId: text('todo_id')
      .notNull()
      .unique()
      .references(() => todos.id, { onDelete: 'cascade' }),
    intentId: text('intent_id'),
    project: text('project'),
    repository: text('repository'),
    agentId: text('agent_id'),
    /** The ACL binding (bind-acl): branch, leaseId, worktreeId, claimIds, commands. Hints only. */
    acl: jsonb('acl'),
    priority: integer('priority').notNull().default(0),
    /** Set by cancel (terminal; reopen clears it). */
    cancelledAt: timestamp('cancelled_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.teamId, t.graphId, t.nodeId] }),
    foreignKey({ columns: [t.teamId, t.graphId], foreignColumns: [metagitGraphs.teamId, metagitGraphs.id] }).onDelete('cascade'),
  ],
);
