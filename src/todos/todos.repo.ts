/**
 * The todos repository: the statements that write the work-item tables, each written once. Every
 * container (todo scopes, scenarios, Task Graph v1 graphs, metagit graphs) adds its edges here.
 * Moving the remaining writers in is tracked by test/architecture/todo-writes.test.ts (WRITERS).
 */
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { BLOCKED_BY_SQL, leaseEndSql } from './todos.view.js';

/** A piece of SQL built with the same connection's tagged template. */
type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A dependency edge: `todoId` waits for `dependencyId` (docs/seeds/todo-list.md, the dependency DAG). */
export type Edge = readonly [todoId: string, dependencyId: string];

/**
 * Inserts dependency edges in one statement. The caller has checked them (same scope, no cycle)
 * and keeps `todos.unfinished_deps` of the dependents right in the same transaction. With
 * `ignoreExisting` an edge already stored is skipped; without it, a duplicate fails the statement
 * (a unique violation: the caller's bug, not the client's).
 */
export async function insertEdges(db: Db, edges: readonly Edge[], opts: { ignoreExisting?: boolean } = {}): Promise<void> {
  if (edges.length === 0) return;
  const from = edges.map((e) => e[0]);
  const to = edges.map((e) => e[1]);
  await db`insert into todo_dependencies (todo_id, dependency_id)
           select * from unnest(${from}::text[], ${to}::text[])
           ${opts.ignoreExisting ? db`on conflict do nothing` : db``}`;
}

/** What a state change of items returns: enough for their events (`eventPayload` in todos.view.ts). */
export interface ItemChange {
  id: string;
  scope: string;
  status: 'todo' | 'in-progress' | 'done' | 'blocked';
  owner: string | null;
  revision: number;
  unfinished_deps: number;
}

/**
 * Puts items that are not done back to `todo`: no owner, no lease, revision bumped. Used when a
 * contract hands a subtask back for another attempt (Task Graph v1 resume). Returns the items it
 * changed; a done item is left alone. The caller writes the events.
 */
export function reopenItems(db: Db, ids: readonly string[]): Promise<ItemChange[]> {
  return db<ItemChange[]>`
    update todos set status = 'todo', owner = null, progress_at = null, revision = revision + 1, updated_at = now()
     where id = any(${ids}::text[]) and status <> 'done'
    returning id, scope, status, owner, revision, unfinished_deps`;
}

/**
 * Blocks items, keeping their owner (who held them when they failed, stopped or were interrupted),
 * with no lease. `onlyInProgress`: only claimed items change (an interrupted dispatch); otherwise
 * every item not already blocked, its owner set to `ownerIfNone` where it had none (a failed or
 * stopped subtask). Returns the items it changed; the caller writes the events.
 */
export function blockItems(db: Db, ids: readonly string[], opts: { onlyInProgress: true } | { ownerIfNone: string }): Promise<ItemChange[]> {
  const owner = 'ownerIfNone' in opts ? db`coalesce(owner, ${opts.ownerIfNone})` : db`owner`;
  const guard = 'ownerIfNone' in opts ? db`status <> 'blocked'` : db`status = 'in-progress'`;
  return db<ItemChange[]>`
    update todos set status = 'blocked', owner = ${owner}, progress_at = null, revision = revision + 1, updated_at = now()
     where id = any(${ids}::text[]) and ${guard}
    returning id, scope, status, owner, revision, unfinished_deps`;
}

/**
 * Records progress on a claimed item (a heartbeat): its lease restarts from now. Returns the new
 * lease deadline (null when leases are off, `leaseMs` 0), or undefined when the item is not in
 * progress.
 */
export async function touchProgress(db: Db, id: string, leaseMs: number): Promise<{ leaseExpiresAt: Date | null } | undefined> {
  const [row] = await db<{ lease_expires_at: Date | null }[]>`
    update todos set progress_at = now() where id = ${id} and status = 'in-progress'
    returning case when ${leaseMs}::float8 > 0 then ${leaseEndSql(db, leaseMs, db`progress_at`)} end as lease_expires_at`;
  return row ? { leaseExpiresAt: row.lease_expires_at } : undefined;
}

/** An item whose claim was released, with who held it and what it now waits for (its events need both). */
export interface ReleasedClaim extends ItemChange {
  team_id: string;
  former_owner: string;
  blocked_by: string[];
}

/**
 * Releases claims: the items `chosen` selects (a query returning `id, owner`, locked `for update`)
 * go back to `todo`, no owner, no lease, revision bumped, where `guard` (over `t`, the item, and
 * `x`, the chosen row) still holds. The one statement behind the lease sweep (a claim whose lease
 * expired) and a session's stop (its claims reopen), docs/seeds/todo-list.md (reclaim on stop and
 * by lease). Returns the released items; the caller writes the events.
 */
export function releaseClaims(db: Db, chosen: Fragment, guard: Fragment): Promise<ReleasedClaim[]> {
  return db<ReleasedClaim[]>`
    with x as (${chosen})
    update todos t set status = 'todo', owner = null, progress_at = null, revision = t.revision + 1, updated_at = now()
      from x
     where t.id = x.id and ${guard}
    returning t.id, t.team_id, t.scope, t.status, t.owner, t.revision, t.unfinished_deps, x.owner as former_owner,
              ${db.unsafe(BLOCKED_BY_SQL)} as blocked_by`;
}

/** A new work item's stored fields; the container decides them, the engine stores them. */
export interface NewItem {
  id: string;
  title: string;
  note?: string | null;
  /** Who may claim it (a session id, or `agent:<id>` for a Task Graph v1 subtask). */
  assignee?: string | null;
  parentId?: string | null;
  tags?: readonly string[];
  /** 1-based position in its scope, handed out by the scope's counter (`scopes.last_position`). */
  position: number;
  /** How many of its dependencies are not done yet: the readiness counter. */
  unfinishedDeps: number;
  priority?: number;
}

/**
 * Inserts new work items into one scope of one team, in one statement (as `todo`, unowned). Every
 * container adds items through it: todo scopes (add, bulk), scenarios, Task Graph v1 and metagit
 * graphs. `createdBy` is the principal's id (a scenario's own scope for its seeded items). The
 * caller adds their edges (`insertEdges`) and events in the same transaction. Returns each item's
 * id and times (in no particular order).
 */
export function insertItems(
  db: Db,
  into: { teamId: string; scope: string; createdBy: string },
  items: readonly NewItem[],
): Promise<{ id: string; created_at: Date; updated_at: Date }[]> {
  if (items.length === 0) return Promise.resolve([]);
  const records = items.map((i) => ({
    id: i.id,
    title: i.title,
    note: i.note ?? null,
    assignee: i.assignee ?? null,
    parent_id: i.parentId ?? null,
    tags: i.tags ?? [],
    position: i.position,
    unfinished_deps: i.unfinishedDeps,
    priority: i.priority ?? 0,
  }));
  return db<{ id: string; created_at: Date; updated_at: Date }[]>`
    insert into todos (id, team_id, scope, title, note, assignee, parent_id, tags, created_by, position, unfinished_deps, priority)
    select r.id, ${into.teamId}, ${into.scope}, r.title, r.note, r.assignee, r.parent_id, r.tags, ${into.createdBy}, r.position, r.unfinished_deps, r.priority
      from jsonb_to_recordset(${JSON.stringify(records)}::text::jsonb)
        as r(id text, title text, note text, assignee text, parent_id text, tags text[], position int, unfinished_deps int, priority smallint)
    returning id, created_at, updated_at`;
}
