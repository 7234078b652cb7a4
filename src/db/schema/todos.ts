import { sql } from 'drizzle-orm';
import { DEFAULT_TEAM, teams } from './teams.js';
import { check, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, type AnyPgColumn } from 'drizzle-orm/pg-core';

/**
 * Work items: the one engine's row for todo items, scenario seeds and graph subtasks alike.
 *
 * Stored status is one of todo | in-progress | done | blocked (seed 000 state machine). The
 * effective status (a stored `todo` with an unfinished dependency reads as `blocked`) is derived
 * on read from `todo_dependencies`. `unfinishedDeps` is a transactional cache of that derivation
 * (the number of dependencies whose status is not `done`), maintained in the same transaction as
 * every edge or done-ness change, so the claim predicate stays on the claimed row itself (safe at
 * READ COMMITTED) and `next` is one index probe. See docs/architecture.md "Readiness".
 */
export const todos = pgTable(
  'todos',
  {
    id: text('id').primaryKey(),
    /**
     * The team of the item's scope: a scope string names a list within one team, so
     * every scope-keyed read filters by `(team_id, scope)`.
     */
    teamId: text('team_id')
      .notNull()
      .default(DEFAULT_TEAM)
      .references(() => teams.id),
    scope: text('scope').notNull(),
    title: text('title').notNull(),
    note: text('note'),
    status: text('status').notNull().default('todo'),
    owner: text('owner'),
    assignee: text('assignee'),
    parentId: text('parent_id').references((): AnyPgColumn => todos.id, { onDelete: 'cascade' }),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** Last progress by the owner (claim, owner mutation, heartbeat); lease deadline = this + claim_lease. */
    progressAt: timestamp('progress_at', { withTimezone: true }),
    /**
     * When the current claim began (the item went in-progress, or changed owner while in it); null
     * when not in-progress. Set by a trigger (migration 0012), so every claim path keeps it.
     */
    claimedAt: timestamp('claimed_at', { withTimezone: true }),
    revision: integer('revision').notNull().default(1),
    position: integer('position').notNull(),
    unfinishedDeps: integer('unfinished_deps').notNull().default(0),
    /** Claimed first when higher: `next` orders by priority desc, then the seed's (position, id). */
    priority: smallint('priority').notNull().default(0),
    /**
     * What the item's `done` handed on: any JSON value (a text result is a JSON
     * string), at most `[todo] max_result` bytes serialised (checked by the server). Set only
     * while done: leaving done clears it (trigger `todos_clear_result`, migrations/0014).
     */
    result: jsonb('result'),
  },
  (t) => [
    check('todos_status_check', sql`${t.status} in ('todo', 'in-progress', 'done', 'blocked')`),
    // Seed invariant: a stored todo has no owner; every other stored status has one.
    check('todos_owner_check', sql`(${t.status} = 'todo') = (${t.owner} is null)`),
    check('todos_title_check', sql`octet_length(${t.title}) between 1 and 500`),
    check('todos_note_check', sql`${t.note} is null or octet_length(${t.note}) <= 2000`),
    check('todos_unfinished_check', sql`${t.unfinishedDeps} >= 0`),
    check('todos_result_check', sql`${t.result} is null or ${t.status} = 'done'`),
    index('todos_team_scope_position_idx').on(t.teamId, t.scope, t.position, t.id),
    // The ready set in `next` order: an unfiltered `next` is one probe of this partial index,
    // whatever the backlog size. `nullsFirst()`: `priority desc` in SQL is `desc nulls first`,
    // and only an index in exactly the claim's order serves it (migrations/0022;
    // test/todos/claim-plan.test.ts).
    index('todos_team_ready_idx')
      .on(t.teamId, t.scope, t.priority.desc().nullsFirst(), t.position, t.id)
      .where(sql`${t.status} = 'todo' and ${t.owner} is null and ${t.unfinishedDeps} = 0`),
    // The ready set in list order: the first page of `status=todo` reads only ready items, never
    // the done ones before them (src/todos/todos.read.ts).
    index('todos_team_ready_position_idx')
      .on(t.teamId, t.scope, t.position, t.id)
      .where(sql`${t.status} = 'todo' and ${t.owner} is null and ${t.unfinishedDeps} = 0`),
    index('todos_in_progress_idx').on(t.progressAt).where(sql`${t.status} = 'in-progress'`),
    index('todos_done_idx').on(t.updatedAt).where(sql`${t.status} = 'done'`),
    index('todos_owner_idx').on(t.owner).where(sql`${t.owner} is not null`),
    index('todos_parent_idx').on(t.parentId),
    // The attention list (src/attention/attention.service.ts): manual blocks by age, and items
    // reserved for a session, each a small set on a healthy fleet, read without a scan.
    index('todos_blocked_idx').on(t.teamId, t.updatedAt).where(sql`${t.status} = 'blocked'`),
    index('todos_reserved_idx').on(t.assignee).where(sql`${t.assignee} is not null and ${t.status} <> 'done'`),
  ],
);

/** Dependency edges inside one scope: `todoId` waits for `dependencyId` (seed 000 "Dependencies"). */
export const todoDependencies = pgTable(
  'todo_dependencies',
  {
    todoId: text('todo_id')
      .notNull()
      .references(() => todos.id, { onDelete: 'cascade' }),
    dependencyId: text('dependency_id')
      .notNull()
      .references(() => todos.id, { onDelete: 'restrict' }),
  },
  (t) => [
    primaryKey({ columns: [t.todoId, t.dependencyId] }),
    index('todo_dependencies_dependency_idx').on(t.dependencyId),
    check('todo_dependencies_no_self', sql`${t.todoId} <> ${t.dependencyId}`),
  ],
);
