/**
 * How a stored todo row reads: the effective status (seed 000 "Dependencies"; docs/seeds/todo-list.md §3),
 * `blockedBy`, the WHY BLOCKED reason, and the lease deadline from the database clock.
 */
import type { z } from 'zod';
import type { Db } from '../db/client.js';
import type { TodoItem as TodoItemSchema, TodoStatus } from './todos.schemas.js';
import type postgres from 'postgres';

export type StoredStatus = z.output<typeof TodoStatus>;

/** A row as selected by `itemColumns`. */
export interface TodoRow {
  id: string;
  /** The team of the item's scope; never on the wire. */
  team_id: string;
  scope: string;
  title: string;
  note: string | null;
  status: StoredStatus;
  owner: string | null;
  assignee: string | null;
  parent_id: string | null;
  tags: string[];
  created_by: string;
  created_at: Date;
  updated_at: Date;
  revision: number;
  position: number;
  priority: number;
  unfinished_deps: number;
  /** The result `done` stored (any JSON value; null: none, or not done). */
  result: unknown;
  depends_on: string[];
  blocked_by: string[];
  lease_expires_at: Date | null;
  lease_expired: boolean;
}

/** The wire shape of an item (camelCase; optional members omitted when empty): the output of the `TodoItem` schema (todos.schemas.ts), its one definition. */
export type TodoItem = z.output<typeof TodoItemSchema>;

/**
 * SQL (over alias `t`) for the sorted ids of `t`'s unfinished dependencies: `blockedBy`. The
 * derivation itself is the database function `coord_blocked_by` (migrations/0003), the one
 * definition that reads, events and the completion function share.
 */
export const BLOCKED_BY_SQL = 'coord_blocked_by(t.id)';

/**
 * The columns every item read selects from alias `t`. `depends_on` and `blocked_by` are derived
 * from the edges on each read (`derivedColumns`); `lease_expires_at` = last progress +
 * `claim_lease` (0 = no lease), compared with the database clock, never the process clock.
 */
export function itemColumns(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`${storedColumns(sql)}, ${derivedColumns(sql)}, ${leaseColumns(sql, leaseMs)}`;
}

/** The list a row belongs to (a scope string names a list within one team). */
export const teamScopeOf = (r: { team_id: string; scope: string }) => ({ teamId: r.team_id, scope: r.scope });

/**
 * `depends_on` (every dependency id of alias `t`, sorted) and `blocked_by` (the unfinished ones:
 * `coord_blocked_by`, migrations/0003). Written so the claim cycle pays no function call per row
 * (measured: 2–7 % of its Postgres time): `depends_on` is an inline subquery (Postgres runs a
 * SQL function in a select list as its own call per row), and `coord_blocked_by` runs only when
 * the transactional counter `unfinished_deps` says some dependency is unfinished
 * (docs/architecture.md, "Readiness and the claim").
 */
export function derivedColumns(sql: Db): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    array(select e.dependency_id from todo_dependencies e where e.todo_id = t.id order by e.dependency_id) as depends_on,
    case when t.unfinished_deps > 0 then ${sql.unsafe(BLOCKED_BY_SQL)} else '{}'::text[] end as blocked_by`;
}

/** The stored columns of alias `t` that an item read selects (the derived ones come beside them). */
export function storedColumns(sql: Db): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    t.id, t.team_id, t.scope, t.title, t.note, t.status, t.owner, t.assignee, t.parent_id, t.tags, t.created_by,
    t.created_at, t.updated_at, t.revision, t.position, t.priority, t.unfinished_deps, t.result`;
}

/**
 * `lease_expires_at` (last progress + `claim_lease`, null when not in progress or no lease) and
 * `lease_expired` (compared with the database clock) over alias `t`.
 */
export function leaseColumns(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    case when t.status = 'in-progress' and ${leaseMs}::float8 > 0
         then ${leaseEndSql(sql, leaseMs)} end as lease_expires_at,
    (t.status = 'in-progress' and ${leaseExpiredSql(sql, leaseMs)}) as lease_expired`;
}

/**
 * The end of a claim's lease, a timestamptz: the last-progress `column` (default `t.progress_at`)
 * plus `leaseMs` (`claim_lease`, in ms). The one TypeScript spelling of the lease deadline (seed 000:
 * a claim that stops making progress comes back); the database functions `coord_next_many` and
 * `coord_done_many` (src/db/schema.sql) carry the same rule in SQL and must agree with it.
 */
export function leaseEndSql(
  sql: Db,
  leaseMs: number,
  column: postgres.PendingQuery<postgres.Row[]> = sql`t.progress_at`,
): postgres.PendingQuery<postgres.Row[]> {
  return sql`(${column} + ${leaseInterval(sql, leaseMs)})`;
}

/** The lease as an interval: the one place its length is spelled in SQL. */
function leaseInterval(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`make_interval(secs => ${leaseMs}::float8 / 1000)`;
}

/**
 * SQL boolean: a lease is set (`leaseMs` > 0) and its end ({@link leaseEndSql}) has passed by the
 * database clock. Says nothing of status or scope: see {@link freeClaimSql} for a free claim.
 */
export function leaseExpiredSql(sql: Db, leaseMs: number, column?: postgres.PendingQuery<postgres.Row[]>): postgres.PendingQuery<postgres.Row[]> {
  // The column stands alone on one side (not `column + lease <= now()`), so the planner can use
  // an index on it (todos_in_progress_idx on progress_at) for the sweep and the free-claim checks.
  return sql`(${leaseMs}::float8 > 0 and ${column ?? sql`t.progress_at`} <= now() - ${leaseInterval(sql, leaseMs)})`;
}

/**
 * Scopes whose expired claims are free (lease take-over): every scope but a graph
 * contract's. A Task Graph v1 dispatch (`graph:`) that outlives its lease is FAILED `interrupted`
 * and a metagit node (`metagit:`) is left to its contract; neither is ever taken over.
 */
export function takesOverExpiredClaims(scope: string): boolean {
  return !isContractScope(scope);
}

/** The contracts whose scopes' items move only through their own routes, by scope prefix. */
const CONTRACT_PREFIXES = { graph: 'graph:', metagit: 'metagit:' } as const;

/**
 * The contract that manages a scope's items, or undefined for a plain scope: `graph` for a Task
 * Graph v1 graph (`graph:<id>`, seed 002), `metagit` for a metagit task graph (`metagit:<id>`,
 * seed 001). The one TypeScript spelling of that rule; {@link selfManagedScopeSql} is its SQL twin,
 * and the database function coord_next_many (src/db/functions/) carries it too and must agree.
 */
export function contractOf(scope: string): keyof typeof CONTRACT_PREFIXES | undefined {
  if (scope.startsWith(CONTRACT_PREFIXES.graph)) return 'graph';
  if (scope.startsWith(CONTRACT_PREFIXES.metagit)) return 'metagit';
  return undefined;
}

/** True for a scope whose items move only through their contract's routes ({@link contractOf}). */
export function isContractScope(scope: string): boolean {
  return contractOf(scope) !== undefined;
}

/** SQL boolean, the negation of {@link isContractScope} over `column` (default `t.scope`). */
export function selfManagedScopeSql(sql: Db, column: postgres.PendingQuery<postgres.Row[]> = sql`t.scope`): postgres.PendingQuery<postgres.Row[]> {
  return sql`(${column} not like ${`${CONTRACT_PREFIXES.graph}%`} and ${column} not like ${`${CONTRACT_PREFIXES.metagit}%`})`;
}

/**
 * True when the row is a free claim: in progress, its lease past its deadline (database clock),
 * in a scope that takes expired claims over. From its deadline on such a claim reads as the sweep
 * will leave it (`todo`, or `blocked` on unfinished dependencies; no owner), and `claim`/`next`
 * take it over (migrations/0009).
 */
export function isFreeClaim(r: Pick<TodoRow, 'status' | 'scope' | 'lease_expired'>): boolean {
  return r.status === 'in-progress' && r.lease_expired && takesOverExpiredClaims(r.scope);
}

/**
 * SQL over alias `t`, true for a free claim ({@link isFreeClaim}): the predicate the claim, `next`,
 * the lists and the sweep agree on. `leaseMs` is `claim_lease` in ms (0: no lease, never true).
 */
export function freeClaimSql(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`(t.status = 'in-progress' and ${leaseExpiredSql(sql, leaseMs)}
              and ${selfManagedScopeSql(sql)})`;
}

/**
 * SQL over alias `t`, true for a claim its owner still holds: in progress and not a free claim
 * ({@link freeClaimSql}). What `GET /v1/sessions` calls holding, the silent-holder gauge and the
 * attention list count.
 */
export function heldSql(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`(t.status = 'in-progress' and not ${freeClaimSql(sql, leaseMs)})`;
}

/**
 * Effective status from the stored status and the unfinished-dependency count: a stored todo
 * waiting on dependencies reads `blocked`; a free claim (`freeClaim`) reads as the sweep will
 * leave it, `todo` or `blocked`.
 */
export function effectiveStatus(stored: StoredStatus, unfinishedDeps: number, freeClaim = false): StoredStatus {
  if (freeClaim) return unfinishedDeps > 0 ? 'blocked' : 'todo';
  return stored === 'todo' && unfinishedDeps > 0 ? 'blocked' : stored;
}

/** The stored owner as it reads: none for a free claim. */
export function effectiveOwner(r: Pick<TodoRow, 'status' | 'scope' | 'lease_expired' | 'owner'>): string | null {
  return isFreeClaim(r) ? null : r.owner;
}

/**
 * SQL over alias `t`: stored `todo` (so unowned: `todos_owner_check`) with every dependency done,
 * the readiness of seed 000 without a lease take-over. The ready index (`todos_team_ready_idx`)
 * has exactly this predicate, so `next` reads the head of that index.
 */
export function readySql(sql: Db): postgres.PendingQuery<postgres.Row[]> {
  return sql`(t.status = 'todo' and t.owner is null and t.unfinished_deps = 0)`;
}

/**
 * SQL over alias `t`, the twin of {@link isReady}: ready ({@link readySql}) or a free claim
 * ({@link freeClaimSql}) with every dependency done. What the claim statement and a list of
 * `status=todo` admit.
 */
export function claimableSql(sql: Db, leaseMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`(${readySql(sql)} or (${freeClaimSql(sql, leaseMs)} and t.unfinished_deps = 0))`;
}

/**
 * The event of an item put back to `todo` (reopened, released, handed back): `dependency-blocked`
 * while a dependency is unfinished, else `todo` (seed 000: the item reads blocked or ready).
 */
export function backToTodoEvent(r: { unfinished_deps: number }): 'todo' | 'dependency-blocked' {
  return r.unfinished_deps > 0 ? 'dependency-blocked' : 'todo';
}

/** Ready: stored `todo` and unowned, or a free claim, with every dependency done (the claim's predicate; {@link claimableSql} in SQL). */
export function isReady(r: Pick<TodoRow, 'status' | 'scope' | 'lease_expired' | 'owner' | 'unfinished_deps'>): boolean {
  return r.unfinished_deps === 0 && ((r.status === 'todo' && r.owner === null) || isFreeClaim(r));
}

/** The seed's WHY BLOCKED text: `dependencies: a,b` joined with the note by `; ` (note only when blocked). */
export function whyBlocked(effective: StoredStatus, blockedBy: string[], note: string | null): string | undefined {
  const parts: string[] = [];
  if (blockedBy.length > 0) parts.push(`dependencies: ${blockedBy.join(',')}`);
  if (effective === 'blocked' && note) parts.push(note);
  return parts.length ? parts.join('; ') : undefined;
}

export function toItem(r: TodoRow): TodoItem {
  const status = effectiveStatus(r.status, r.unfinished_deps, isFreeClaim(r));
  const owner = effectiveOwner(r);
  const item: TodoItem = {
    id: r.id,
    scope: r.scope,
    title: r.title,
    status,
    ready: isReady(r),
    tags: r.tags,
    dependsOn: r.depends_on,
    blockedBy: r.blocked_by,
    revision: r.revision,
    position: r.position,
    priority: r.priority,
    createdBy: r.created_by,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  if (r.note !== null) item.note = r.note;
  if (owner !== null) item.owner = owner;
  if (r.assignee !== null) item.assignee = r.assignee;
  if (r.parent_id !== null) item.parentId = r.parent_id;
  const why = whyBlocked(status, r.blocked_by, r.note);
  if (why) item.whyBlocked = why;
  if (r.lease_expires_at) {
    item.leaseExpiresAt = r.lease_expires_at.toISOString();
    item.leaseExpired = r.lease_expired;
  }
  if (r.result !== null && r.result !== undefined) item.result = r.result;
  return item;
}

/** The seed's event payload: `{event, id, scope, status, owner?, blockedBy?, revision}`. */
export function eventPayload(
  event: string,
  r: Pick<TodoRow, 'id' | 'scope' | 'status' | 'owner' | 'revision' | 'unfinished_deps'> & { blocked_by?: string[] },
) {
  const p: Record<string, unknown> = {
    event,
    id: r.id,
    scope: r.scope,
    status: effectiveStatus(r.status, r.unfinished_deps),
    revision: r.revision,
  };
  if (r.owner) p.owner = r.owner;
  if (r.blocked_by?.length) p.blockedBy = r.blocked_by;
  return p;
}

/** Selects full rows for ids, in (position, id) order. */
export async function selectItems(db: Db, leaseMs: number, ids: string[]): Promise<TodoRow[]> {
  if (ids.length === 0) return [];
  return db<TodoRow[]>`select ${itemColumns(db, leaseMs)} from todos t where t.id = any(${ids}::text[]) order by t.position, t.id`;
}
