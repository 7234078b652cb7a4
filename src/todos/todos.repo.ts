/**
 * The todos repository: every statement that writes the work-item tables (`todos`,
 * `todo_dependencies`), each written once, and the claim and done statements behind every door
 * (docs/architecture.md §D1: one claim path). Every container (todo scopes, scenarios, Task Graph v1
 * graphs, metagit graphs), the sessions' stop and the sweeps change items through it; the callers
 * check authority and input, choose the events' names and run the transaction.
 * test/architecture/todo-writes.test.ts fails when another file writes these tables.
 *
 * Concurrency model (READ COMMITTED, no scope-wide lock on the hot path):
 * - claim/next is one guarded `UPDATE … WHERE status='todo' AND owner IS NULL AND unfinished_deps=0`
 *   on the claimed row itself, so Postgres re-checks the whole predicate on the newest row version
 *   when two callers race: exactly one wins.
 * - `unfinished_deps` changes only by row-locked increments/decrements in the transaction that
 *   changes a dependency's done-ness (done, reopen) or an item's edges, so concurrent completions
 *   of the last two dependencies decrement 2→1→0 and exactly one of them sees 0 (one unblock).
 * - Edge writers hold `FOR SHARE` on the dependency rows they count (todos.dependencies.ts), which
 *   conflicts with the status UPDATE of done/reopen: a count and a status change never interleave
 *   unseen.
 * - Edge writers of one scope take one advisory lock, so two concurrent inserts cannot both pass
 *   the cycle check.
 */
import type postgres from 'postgres';
import type { EmitEvents } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import type { Actor } from '../auth/actor.js';
import { ringAfterCommit } from '../db/doorbell.js';
import { emitsFor, streamKey, topicOf } from '../events/events.repo.js';
import type { TeamScope } from '../scopes/scopes.js';
import {
  BLOCKED_BY_SQL,
  claimableSql,
  readySql,
  derivedColumns,
  freeClaimSql,
  itemColumns,
  leaseColumns,
  leaseEndSql,
  leaseExpiredSql,
  selfManagedScopeSql,
  storedColumns,
  takesOverExpiredClaims,
  type StoredStatus,
  type TodoRow,
} from './todos.view.js';

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
 * Puts items back to `todo`: no owner, no lease, revision bumped. A contract hands a subtask back
 * for another attempt (Task Graph v1 resume: a done item is left alone) or reopens a node (metagit
 * reopen: `includeDone`, and `clearNote` drops the block reason; the caller then cascades the
 * reopened done item to its dependents). Returns the items it changed; the caller writes the events.
 */
export function reopenItems(db: Db, ids: readonly string[], opts: { includeDone?: boolean; clearNote?: boolean } = {}): Promise<ItemChange[]> {
  return db<ItemChange[]>`
    update todos set status = 'todo', owner = null, progress_at = null, revision = revision + 1, updated_at = now()
                     ${opts.clearNote ? db`, note = null` : db``}
     where id = any(${ids}::text[]) ${opts.includeDone ? db`` : db`and status <> 'done'`}
    returning id, scope, status, owner, revision, unfinished_deps`;
}

/**
 * Blocks items, keeping their owner (who held them when they failed, stopped or were interrupted),
 * with no lease. `onlyInProgress`: only claimed items change (an interrupted dispatch). Otherwise
 * the owner is set to `ownerIfNone` where it had none, and without a `note` every item not
 * already blocked changes (a failed or stopped subtask); with one, every item not done changes
 * and the note becomes the reason (a metagit node blocked or cancelled, a new reason replacing an
 * old one). Returns the items it changed; the caller writes the events.
 */
export function blockItems(db: Db, ids: readonly string[], opts: { onlyInProgress: true } | { ownerIfNone: string; note?: string }): Promise<ItemChange[]> {
  const reason = 'ownerIfNone' in opts ? opts.note : undefined;
  const owner = 'ownerIfNone' in opts ? db`coalesce(owner, ${opts.ownerIfNone})` : db`owner`;
  const guard = !('ownerIfNone' in opts) ? db`status = 'in-progress'` : reason !== undefined ? db`status <> 'done'` : db`status <> 'blocked'`;
  return db<ItemChange[]>`
    update todos set status = 'blocked', owner = ${owner}, progress_at = null, revision = revision + 1, updated_at = now()
                     ${reason !== undefined ? db`, note = ${reason}` : db``}
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

// ---------------------------------------------------------------------------------------------
// Claim and done

/**
 * The filters of `next`, each optional, all of them ANDed: `tags` (the item carries
 * every one), `anyTags` (at least one), `minPriority` (priority ≥), `assignedToMe` (reserved for
 * the caller). Tags normalised (`normalizeNextFilters`), so equal filters batch together.
 */
export interface NextFilters {
  tags?: string[];
  anyTags?: string[];
  minPriority?: number;
  assignedToMe?: boolean;
}

/** One `next`: the caller's session claims in `scope` (its team's list), among the items `filters` admit. */
export interface NextRequest {
  scope: TeamScope;
  actor: string;
  /** Who made the request, as its events record it (the audit): the session `actor` and its token. */
  by: Actor;
  /** The scope's `emit_events` decision. */
  emit: boolean;
  leaseMs: number;
  filters?: NextFilters;
}

/** The filters as SQL over alias `t` (true when none): the one definition the lone claim uses; coord_next_many (migrations/0011) spells the same. */
function filterSql(db: Db, actor: string, f: NextFilters = {}) {
  return db`
    ${f.assignedToMe ? db`t.assignee = ${actor}` : db`(t.assignee is null or t.assignee = ${actor})`}
    ${f.minPriority !== undefined ? db`and t.priority >= ${f.minPriority}` : db``}
    ${f.tags?.length ? db`and t.tags @> ${f.tags}::text[]` : db``}
    ${f.anyTags?.length ? db`and t.tags && ${f.anyTags}::text[]` : db``}`;
}

/** One `done` of item `id` by `actor` (null: an operator, only with override authority). */
export interface DoneRequest {
  id: string;
  actor: string | null;
  /** Who made the request, as its events record it (the audit): the owner, or an override's principal. */
  by: Actor;
  leaseMs: number;
  /** `[todo] emit_events`. */
  emitEvents: EmitEvents;
  /**
   * The result to store with the item: any JSON value, already checked against
   * `[todo] max_result`; undefined or null: none.
   */
  result?: unknown;
}

/**
 * The events of the claim CTE `c` (the claimed row plus `former_owner`, the owner of the expired
 * claim it took over, or null), written by the claim statement itself (one round trip, same
 * transaction), in order: for a take-over first `todo` (reason `lease-expired`, `formerOwner`,
 * revision − 1: what the lease sweep would have written), then `claimed`, both recording `by` as
 * who made the change. `emit` is the scope's `emit_events` decision. coord_next_many
 * (migrations/0016) writes the same events for a batch.
 */
export function claimedEvent(db: Db, emit: boolean, by: Actor) {
  return db`ev as (
      insert into events (team_id, topic, event, subject_id, payload, actor_kind, actor_id, actor_token)
      select c.team_id, 'todo:' || c.scope, e.event, c.id, e.payload, ${by.kind}, ${by.id}, ${by.token}::text
        from c cross join lateral (
          select 1 as step, 'todo' as event,
                 jsonb_build_object('event', 'todo', 'id', c.id, 'scope', c.scope, 'status', 'todo',
                                    'revision', c.revision - 1, 'reason', 'lease-expired', 'formerOwner', c.former_owner) as payload
           where c.former_owner is not null
          union all
          select 2, 'claimed',
                 jsonb_build_object('event', 'claimed', 'id', c.id, 'scope', c.scope, 'status', 'in-progress',
                                    'owner', c.owner, 'revision', c.revision)) e
       where ${emit}
       order by e.step)`;
}

/**
 * The claim's guarded UPDATE, the CTE `c`, over the one-row CTE `target` (the `id` to claim,
 * locked, and its `former_owner`: the owner of the expired claim it takes over, or null): the
 * seed's compare-and-set `(todo ∧ unowned ∨ a free claim) ∧ every dependency done` → in-progress,
 * owned by `actor`, progress now; a take-over moves the revision by 2 (one per event,
 * `claimedEvent`). `guard` adds the caller's own conditions. Returns the row and `former_owner`.
 */
export function claimUpdate(db: Db, actor: string, leaseMs: number, guard: postgres.PendingQuery<postgres.Row[]> = db``) {
  return db`c as (
      update todos t set status = 'in-progress', owner = ${actor},
                         revision = t.revision + case when t.status = 'in-progress' then 2 else 1 end,
                         updated_at = now(), progress_at = now()
        from target
       where t.id = target.id and ${claimableSql(db, leaseMs)}
         ${guard}
      returning t.*, target.former_owner)`;
}

/**
 * The CTE `live`: the claiming session's row, if it is still active, locked `FOR SHARE` until the
 * claim commits. A stop (or soft delete) updates that row and then reopens what the session owns,
 * so the two serialise: a claim that locked first commits before the stop's reopen runs (which then
 * reopens it), and a claim that waited re-reads the row, sees it stopped and claims nothing. Without
 * it a request that passed authentication just before the stop could claim after the reopen and
 * strand the item for a whole lease.
 */
export function liveSession(db: Db, actor: string) {
  return db`live as (select id from sessions where id = ${actor} and status = 'active' for share)`;
}

/**
 * One `next` alone, one statement: the first eligible item in (priority desc, position, id) order
 * among those `req.filters` admit, a ready one (the ready index) or a free claim (an expired
 * lease, `freeClaimSql`), each `FOR UPDATE SKIP LOCKED`;
 * the guarded UPDATE (a take-over moves revision by 2) and its events (`claimedEvent`), while the
 * session is active (`live`). Resolves with the claimed row or null.
 */
export async function claimNextAlone(sql: Sql, req: NextRequest): Promise<TodoRow | null> {
  const takesOver = req.leaseMs > 0 && takesOverExpiredClaims(req.scope.scope);
  // The first eligible row of each kind, locked; `former_owner` is the expired claim's owner.
  const first = (name: string, kind: postgres.PendingQuery<postgres.Row[]>, formerOwner: postgres.PendingQuery<postgres.Row[]>) => sql`
    ${sql(name)} as (
      select t.id, t.priority, t.position, ${formerOwner} as former_owner from todos t
       where t.team_id = ${req.scope.teamId} and t.scope = ${req.scope.scope} and ${kind}
         and ${filterSql(sql, req.actor, req.filters)}
         and exists (select 1 from live)
       order by t.priority desc, t.position, t.id
       limit 1
       for update skip locked)`;
  const rows = await sql<TodoRow[]>`
    with ${liveSession(sql, req.actor)},
    ${first('ready', readySql(sql), sql`null::text`)},
    ${first('expired', sql`${takesOver} and ${freeClaimSql(sql, req.leaseMs)} and t.unfinished_deps = 0`, sql`t.owner`)},
    target as (
      select id, former_owner from (select * from ready union all select * from expired) u
       order by u.priority desc, u.position, u.id
       limit 1),
    ${claimUpdate(sql, req.actor, req.leaseMs)},
    ${claimedEvent(sql, req.emit, req.by)}
    select ${itemColumns(sql, req.leaseMs)} from c t`;
  if (rows[0] && req.emit) ringAfterCommit(sql, [streamKey(req.scope.teamId, topicOf(req.scope.scope))]);
  return rows[0] ?? null;
}

/**
 * `next` for a batch of requests of one scope, filters, lease and `emit` (the group commit's `next`
 * lane, src/todos/todos.batch.ts): one call of `coord_next_many` (src/db/functions/coord_next_many.sql),
 * meaning what the requests mean run one after another in order. Returns one row per request, in
 * order: the claimed row, a row with a null `id` (nothing eligible), or `retry` (the locked rows ran
 * out for this live actor: run its `next` alone). Rings the scope's topic when it claimed anything.
 */
export async function claimNextMany(sql: Sql, reqs: readonly NextRequest[]): Promise<(TodoRow & { retry: boolean })[]> {
  const { scope, emit, leaseMs, filters: f = {} } = reqs[0];
  const rows = await sql<(TodoRow & { retry: boolean })[]>`
    select ${storedColumns(sql)}, ${derivedColumns(sql)}, ${leaseColumns(sql, leaseMs)}, f.o_retry as retry
      from coord_next_many(${scope.teamId}, ${scope.scope}, ${reqs.map((r) => r.actor)}::text[], ${emit}, ${leaseMs}::float8,
                           ${f.minPriority ?? null}::int, ${f.tags?.length ? f.tags : null}::text[],
                           ${f.anyTags?.length ? f.anyTags : null}::text[], ${!!f.assignedToMe},
                           ${reqs.map((r) => r.by.token)}::text[])
           with ordinality f(o_item, o_retry, ord)
           cross join lateral (select (f.o_item).*) t
     order by f.ord`;
  if (rows.length !== reqs.length) throw new Error(`coord_next_many returned ${rows.length} rows for ${reqs.length} actors`);
  if (emit && rows.some((r) => r.id !== null)) ringAfterCommit(sql, [streamKey(scope.teamId, topicOf(scope.scope))]);
  return rows;
}

/**
 * `done` of distinct items in one statement (coord_done_many, migrations/0014): one row per
 * request, in order, the completed row or null when its guard did not match. Without `override`
 * only each item's owner may complete it; with it (the scope's override authority, checked by the
 * caller) anyone may. Request i's `result` travels as element i of `p_results` (serialised here,
 * parsed to jsonb by Postgres: postgres.js binds no jsonb[]), so the guarded UPDATE stores each
 * result on its own item and the `done` event carries it, recording request i's `by` as who made
 * the change (p_by_*, migrations/0016). Rings the topics of the events it wrote.
 */
export async function completeMany(sql: Sql, reqs: DoneRequest[], override = false): Promise<(TodoRow | null)[]> {
  if (reqs.length === 0) return [];
  const { leaseMs, emitEvents } = reqs[0];
  const results = reqs.map((r) => (r.result === undefined || r.result === null ? null : JSON.stringify(r.result)));
  const rows = await sql<TodoRow[]>`
    select t.*, ${derivedColumns(sql)}, null::timestamptz as lease_expires_at, false as lease_expired
      from coord_done_many(${reqs.map((r) => r.id)}::text[], ${reqs.map((r) => r.actor)}::text[], ${override},
                           ${leaseMs}::float8, ${emitEvents}, false, ${results}::text[]::jsonb[],
                           ${reqs.map((r) => r.by.kind)}::text[], ${reqs.map((r) => r.by.id)}::text[], ${reqs.map((r) => r.by.token)}::text[]) with ordinality t
     order by t.ordinality`;
  if (rows.length !== reqs.length) throw new Error(`coord_done_many returned ${rows.length} rows for ${reqs.length} items`);
  const done = rows.map((r) => (r.id === null ? null : r));
  const topics = new Set<string>();
  for (const r of done) if (r && emitsFor(r.scope, emitEvents)) topics.add(streamKey(r.team_id, topicOf(r.scope)));
  if (topics.size) ringAfterCommit(sql, topics);
  return done;
}

/**
 * The `done` of a contract's own engine row (a Task Graph subtask, a metagit node), by `by` with
 * override authority, without a result: the guarded transition, the cascade to dependents and the
 * `done`/`unblocked` events (recording `by`) in the caller's transaction. The caller notes the
 * topic for the doorbell.
 */
export async function completeContractRow(tx: Db, todoId: string, owner: string | null, by: Actor, emitEvents: EmitEvents): Promise<void> {
  await tx`select id from coord_done_many(${[todoId]}::text[], ${[owner]}::text[], true, 0::float8, ${emitEvents}, true, null::jsonb[],
                                          ${[by.kind]}::text[], ${[by.id]}::text[], ${[by.token]}::text[])`;
}

/**
 * The claim, one statement (docs/architecture.md §D1: the one claim path): the guarded compare-and-set
 * `(todo ∧ unowned ∨ a free claim) ∧ every dependency done ∧ (unassigned ∨ assigned to the actor ∨
 * override)` → in-progress, owned by `actor`, while the actor's session is active
 * (`liveSession`), with its events when `emit` (`claimedEvent`: a take-over of a free claim, an
 * expired lease in a plain scope, writes `todo` with reason lease-expired, then `claimed`). Resolves with the claimed row (item columns), or undefined when
 * the guard did not hold. `db` may be a transaction (Task Graph dispatch claims under the graph
 * lock through this same statement); the caller rings the doorbell after commit. `by` is who made
 * the change, as the events record it (the dispatcher, for a dispatch's claim).
 */
export async function guardedClaim(
  db: Db,
  c: { id: string; actor: string; by: Actor; override: boolean; emit: boolean; leaseMs: number },
): Promise<TodoRow | undefined> {
  const rows = await db<TodoRow[]>`
    with ${liveSession(db, c.actor)},
    target as (select t.id, case when t.status = 'in-progress' then t.owner end as former_owner
                 from todos t where t.id = ${c.id} for update),
    ${claimUpdate(db, c.actor, c.leaseMs, db`and (t.assignee is null or t.assignee = ${c.actor} or ${c.override}) and exists (select 1 from live)`)},
    ${claimedEvent(db, c.emit, c.by)}
    select ${itemColumns(db, c.leaseMs)} from c t`;
  return rows[0];
}

/**
 * Claims one ready, unowned item for `owner` by id through the claim statement (`claimUpdate`),
 * with no session check, no lease take-over and no todo events: a contract that starts and
 * finishes a node in one step (metagit `complete` of a ready node, by its caller, who may be a
 * user). Returns false when the item was not ready and unowned any more (someone started it).
 */
export async function startItem(db: Db, id: string, owner: string): Promise<boolean> {
  const rows = await db`
    with target as (select ${id}::text as id, null::text as former_owner),
    ${claimUpdate(db, owner, 0)}
    select id from c`;
  return rows.length > 0;
}

/**
 * Adjusts the dependents of `dependencyId` after it became done (`delta = -1`) or stopped being
 * done (`+1`), in the database function `coord_cascade` (src/db/functions/coord_cascade.sql),
 * which locks them in id order. Returns the ids of the dependents whose readiness flipped: with
 * -1, stored-todo dependents that reached 0 (unblocked); with +1, unowned stored-todo dependents
 * that left 0 (dependency-blocked). Only those get a revision bump (seed 000: one readiness
 * transition). The caller writes their events.
 */
export async function cascade(db: Db, dependencyId: string, delta: 1 | -1): Promise<string[]> {
  return (await db<{ id: string }[]>`select coord_cascade as id from coord_cascade(${dependencyId}, ${delta}::int)`).map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Transitions, progress, edits and removal of todo-list items

/** A state a todo-list transition moves an item to (seed 000: done, block, reopen). */
export type TransitionTarget = 'done' | 'blocked' | 'todo';

/** The stored states each transition starts from (seed 000's state machine; docs/seeds/todo-list.md). */
export const TRANSITION_FROM: Readonly<Record<TransitionTarget, readonly StoredStatus[]>> = {
  done: ['in-progress', 'blocked'],
  blocked: ['in-progress'],
  todo: ['in-progress', 'done', 'blocked'],
};

/**
 * The guarded UPDATE of a transition of a plain scope's item (a contract's items move only
 * through their contract): from one of the target's start states, by the owner (or anyone with
 * `override`), not on the caller's own expired claim. Reopening clears the owner; blocking keeps
 * the lease clock, the others clear it; a non-null `note` replaces the note. Returns the item's id,
 * scope and former status, or undefined when the guard did not hold (the caller says why). `done`
 * goes through `completeMany` instead (result, cascade and events in one call).
 */
export async function transitionItem(
  db: Db,
  t: { id: string; to: TransitionTarget; note: string | null; actor: string | null; override: boolean; leaseMs: number },
): Promise<{ id: string; scope: string; old_status: StoredStatus } | undefined> {
  const [r] = await db<{ id: string; scope: string; old_status: StoredStatus }[]>`
    update todos t
       set status = ${t.to},
           owner = case when ${t.to} = 'todo' then null else t.owner end,
           note = coalesce(${t.note}, t.note),
           revision = t.revision + 1, updated_at = now(),
           progress_at = case when ${t.to} = 'blocked' then t.progress_at else null end
      from (select id, status as old_status from todos where id = ${t.id} for update) o
     where t.id = o.id
       and ${selfManagedScopeSql(db)}
       and t.status = any(${TRANSITION_FROM[t.to]}::text[])
       and (${t.override} or t.owner = ${t.actor})
       and not (t.owner is not distinct from ${t.actor} and t.status = 'in-progress' and ${leaseExpiredSql(db, t.leaseMs)})
    returning t.id, t.scope, o.old_status`;
  return r;
}

/**
 * The owner's heartbeat: its claim's lease restarts from now, while the claim is in progress, held
 * by `owner` and not expired. No revision bump, no event. Returns the item (item columns), or
 * undefined when the guard did not hold.
 */
export async function heartbeatItem(db: Db, id: string, owner: string, leaseMs: number): Promise<TodoRow | undefined> {
  const rows = await db<TodoRow[]>`
    with h as (
      update todos set progress_at = now()
       where id = ${id} and owner = ${owner} and status = 'in-progress'
         and not ${leaseExpiredSql(db, leaseMs, db`progress_at`)}
      returning *)
    select ${itemColumns(db, leaseMs)} from h t`;
  return rows[0];
}

/**
 * Replaces an item's dependency edges with `deps` (already checked: same scope, no cycle, locked)
 * and stores its count of unfinished dependencies, `unfinished`, in the caller's transaction.
 */
export async function replaceEdges(db: Db, id: string, deps: readonly string[], unfinished: number): Promise<void> {
  await db`delete from todo_dependencies where todo_id = ${id} and not (dependency_id = any(${deps}::text[]))`;
  await insertEdges(
    db,
    deps.map((d) => [id, d] as const),
    { ignoreExisting: true },
  );
  await db`update todos set unfinished_deps = ${unfinished} where id = ${id}`;
}

/** The fields an edit changes; an absent one stays. `note: null` clears the note. */
export interface ItemEdit {
  title?: string;
  note?: string | null;
  tags?: string[];
  position?: number;
  priority?: number;
}

/**
 * Writes an edit: the given fields, one revision bump. `ownerProgress`: the caller owns the item,
 * so a claimed item's lease restarts (an owner's edit counts as progress).
 */
export async function editItem(db: Db, id: string, e: ItemEdit, ownerProgress: boolean): Promise<void> {
  await db`
    update todos set
      title = coalesce(${e.title ?? null}, title),
      note = case when ${e.note !== undefined} then ${e.note ?? null} else note end,
      tags = coalesce(${e.tags ?? null}::text[], tags),
      position = coalesce(${e.position ?? null}::int, position),
      priority = coalesce(${e.priority ?? null}::smallint, priority),
      revision = revision + 1, updated_at = now(),
      progress_at = case when ${ownerProgress} and status = 'in-progress' then now() else progress_at end
    where id = ${id}`;
}

/** Sets (or with null clears) an item's assignee, one revision bump. */
export async function assignItem(db: Db, id: string, assignee: string | null): Promise<void> {
  await db`update todos set assignee = ${assignee}, revision = revision + 1, updated_at = now() where id = ${id}`;
}

/** Deletes items and every edge touching them (the caller has checked that nothing outside depends on them). */
export async function removeItems(db: Db, ids: readonly string[]): Promise<void> {
  await db`delete from todo_dependencies where todo_id = any(${ids}::text[]) or dependency_id = any(${ids}::text[])`;
  await db`delete from todos where id = any(${ids}::text[])`;
}

/** A removed item, as its `removed` event needs it. */
export interface RemovedItem extends ItemChange {
  team_id: string;
}

/**
 * Retention (seed 000): deletes those of `ids` (done top-level items past retention, chosen by the
 * sweep) that nothing depends on and whose sub-items are done and depended on by nothing, with
 * those sub-items and their edges. Returns every item deleted, sub-items included.
 */
export function deleteRetired(db: Db, ids: readonly string[]): Promise<RemovedItem[]> {
  return db<RemovedItem[]>`
    with doomed as (
      select t.id from todos t
       where t.id = any(${ids}::text[])
         and not exists (select 1 from todo_dependencies e where e.dependency_id = t.id)
         and not exists (select 1 from todos c where c.parent_id = t.id and c.status <> 'done')
         and not exists (select 1 from todos c join todo_dependencies e on e.dependency_id = c.id where c.parent_id = t.id)),
    everything as (
      select id from doomed union select c.id from todos c join doomed d on c.parent_id = d.id),
    edges as (delete from todo_dependencies e using everything x where e.todo_id = x.id)
    delete from todos t using everything x where t.id = x.id
    returning t.id, t.team_id, t.scope, t.status, t.owner, t.revision, t.unfinished_deps`;
}
