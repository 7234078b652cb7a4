import { sql } from 'drizzle-orm';
import { pgTable, text, timestamp, integer, uniqueIndex } from 'drizzle-orm/pg-core';

/**
 * The team every row existing before teams belongs to, and the team of the server administrator
 * (docs/architecture.md "Teams").
 */
export const DEFAULT_TEAM = 'tm-default';

/**
 * Teams: a team owns its operators, sessions, Agents, scopes and items, graphs,
 * scenarios, metagit objects and events, each of which carries the team's id in `team_id`. Coord
 * names the team in every insert; the columns' default ({@link DEFAULT_TEAM}) is there only for a
 * replica of the previous release during a rolling upgrade (migrations 0017, 0018), which acts in
 * the default team alone; the next release drops it.
 */
export const teams = pgTable(
  'teams',
  {
    /** `tm-…`; the team of a database upgraded from before teams is {@link DEFAULT_TEAM}. */
    id: text('id').primaryKey(),
    name: text('name').notNull().unique(),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revision: integer('revision').notNull().default(1),
  },
  (t) => [uniqueIndex('teams_name_lower_unique').on(sql`lower(${t.name})`)],
);
