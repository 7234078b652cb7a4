import { sql } from 'drizzle-orm';
import { boolean, integer, jsonb, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core';
import { todos } from './todos.js';
import { DEFAULT_TEAM, teams } from './teams.js';

/** A scenario: a shared list `scenario:<id>` with an orchestrator and named members (seed 000 "In scenarios"). */
export const scenarios = pgTable(
  'scenarios',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /** The orchestrator session: the scope's override authority. */
    orchestratorId: text('orchestrator_id').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** Set once, when derived completion first holds (the completion event is written then). */
    completedAt: timestamp('completed_at', { withTimezone: true }),
    revision: integer('revision').notNull().default(1),
    /** The team of its creator. */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
  },
  (t) => [unique('scenarios_team_name_unique').on(t.teamId, t.name)],
);

/** A named member of a scenario, bound to a session. */
export const scenarioMembers = pgTable(
  'scenario_members',
  {
    scenarioId: text('scenario_id')
      .notNull()
      .references(() => scenarios.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    sessionId: text('session_id').notNull(),
    task: text('task'),
    /** Member names this member's seed depends on (resolved to their original seeds). */
    dependsOn: text('depends_on').array().notNull().default(sql`'{}'::text[]`),
    /** A shared member keeps its own session and scope; it is only granted access here. */
    shared: boolean('shared').notNull().default(false),
    requiresResult: boolean('requires_result').notNull().default(false),
    result: jsonb('result'),
    resultAt: timestamp('result_at', { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.scenarioId, t.name] }), unique('scenario_members_session_unique').on(t.scenarioId, t.sessionId)],
);

/** Which item was seeded for which member: stable even when the item is reassigned (seed 000). */
export const todoScenarioSeeds = pgTable(
  'todo_scenario_seeds',
  {
    todoId: text('todo_id')
      .primaryKey()
      .references(() => todos.id, { onDelete: 'cascade' }),
    scenarioId: text('scenario_id')
      .notNull()
      .references(() => scenarios.id, { onDelete: 'cascade' }),
    memberName: text('member_name').notNull(),
  },
  (t) => [unique('todo_scenario_seeds_member_unique').on(t.scenarioId, t.memberName)],
);
