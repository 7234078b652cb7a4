/**
 * The claim cycle under load: `next` and the owner's `done` go through group commit
 * (src/db/group-commit.ts). Requests of one kind that arrive while a batch is running become the
 * next batch: one call of `coord_next_many` / `coord_done_many` (migrations/0004_group_commit.sql),
 * one round trip and one commit for all of them. A batch means what its requests mean run one
 * after another in arrival order (seed 000 `next` and `done`); docs/architecture.md "Group commit"
 * says how.
 */
import postgres from 'postgres';
import type { EmitEvents } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import type { Actor } from '../auth/actor.js';
import { GroupCommit } from '../db/group-commit.js';
import { ringAfterCommit } from '../db/doorbell.js';
import { emitsFor, streamKey, topicOf } from '../events/events.repo.js';
import type { TeamScope } from '../scopes/scopes.js';
import { derivedColumns, freeClaimSql, itemColumns, leaseColumns, storedColumns, takesOverExpiredClaims, type TodoRow } from './todos.view.js';

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

/** The batch key part of the filters: requests with equal filters share a batch. */
function filterKey(f: NextFilters = {}): string {
  return JSON.stringify([f.tags ?? [], f.anyTags ?? [], f.minPriority ?? null, !!f.assignedToMe]);
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

interface Lanes {
  next: GroupCommit<NextRequest, TodoRow | null>;
  done: GroupCommit<DoneRequest, TodoRow | null>;
}

const lanesOf = new WeakMap<Sql, Lanes>();

/** Errors Postgres reported: the batch's transaction was rolled back, nothing committed. */
const rolledBack = (err: unknown) => err instanceof postgres.PostgresError;

/**
 * One batch of a kind (and scope) runs at a time per replica; the next one fills meanwhile.
 * Measured (N=32 agents, 2 cores): 1 in flight beats 2 by ~20 % and 3 by ~40 % in cycles/s,
 * since concurrent batches contend in Postgres for the same head of the ready index.
 */
const MAX_IN_FLIGHT = 1;

function lanes(sql: Sql, maxBatch: number): Lanes {
  let l = lanesOf.get(sql);
  if (l) return l;
  const opts = { maxBatch, maxInFlight: MAX_IN_FLIGHT, rolledBack };
  l = {
    next: new GroupCommit<NextRequest, TodoRow | null>(async (_key, reqs) => {
      // A lone request (an idle replica) takes the one-statement claim: no function call.
      if (reqs.length === 1) return [await claimNextAlone(sql, reqs[0])];
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
      const claimed = await Promise.all(rows.map(async (r, i) => (r.retry ? claimNextAlone(sql, reqs[i]) : r.id === null ? null : r)));
      if (emit && rows.some((r) => r.id !== null)) ringAfterCommit(sql, [streamKey(scope.teamId, topicOf(scope.scope))]);
      return claimed;
    }, opts),
    done: new GroupCommit<DoneRequest, TodoRow | null>(async (_key, reqs) => {
      // coord_done_many takes distinct ids: a repeated id (the same item completed twice at
      // once) runs after the batch, alone, and sees the first one's outcome.
      const seen = new Set<string>();
      const first: number[] = [];
      const repeated: number[] = [];
      reqs.forEach((r, i) => {
        if (seen.has(r.id)) repeated.push(i);
        else {
          seen.add(r.id);
          first.push(i);
        }
      });
      const out: (TodoRow | null)[] = new Array(reqs.length).fill(null);
      const batchRows = await completeMany(
        sql,
        first.map((i) => reqs[i]),
      );
      first.forEach((i, j) => (out[i] = batchRows[j]));
      for (const i of repeated) out[i] = (await completeMany(sql, [reqs[i]]))[0];
      return out;
    }, opts),
  };
  lanesOf.set(sql, l);
  return l;
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
       where t.id = target.id and t.unfinished_deps = 0
         and ((t.status = 'todo' and t.owner is null) or ${freeClaimSql(db, leaseMs)})
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
async function claimNextAlone(sql: Sql, req: NextRequest): Promise<TodoRow | null> {
  const takesOver = req.leaseMs > 0 && takesOverExpiredClaims(req.scope.scope);
  // The first eligible row of each kind, locked; `former_owner` is the expired claim's owner.
  const first = (name: string, kind: postgres.PendingQuery<postgres.Row[]>, formerOwner: postgres.PendingQuery<postgres.Row[]>) => sql`
    ${sql(name)} as (
      select t.id, t.priority, t.position, ${formerOwner} as former_owner from todos t
       where t.team_id = ${req.scope.teamId} and t.scope = ${req.scope.scope} and t.unfinished_deps = 0 and ${kind}
         and ${filterSql(sql, req.actor, req.filters)}
         and exists (select 1 from live)
       order by t.priority desc, t.position, t.id
       limit 1
       for update skip locked)`;
  const rows = await sql<TodoRow[]>`
    with ${liveSession(sql, req.actor)},
    ${first('ready', sql`t.status = 'todo' and t.owner is null`, sql`null::text`)},
    ${first('expired', sql`${takesOver} and ${freeClaimSql(sql, req.leaseMs)}`, sql`t.owner`)},
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
 * `next` through group commit: resolves with the claimed row (item columns, lease from
 * `leaseMs`), or null when nothing in `scope` was eligible for `actor`. Rejects with the database
 * error of the request (after a failed batch, each request runs again alone).
 */
export function batchedNext(sql: Sql, maxBatch: number, req: NextRequest): Promise<TodoRow | null> {
  if (maxBatch <= 1) return claimNextAlone(sql, req);
  return lanes(sql, maxBatch).next.submit(
    `${req.scope.teamId}\u0000${req.scope.scope}\u0000${req.emit}\u0000${req.leaseMs}\u0000${filterKey(req.filters)}`,
    req,
  );
}

/**
 * The owner's `done` through group commit: resolves with the completed row, or null when the
 * guard did not match (not the owner, wrong state, lease expired: the caller says which).
 */
export async function batchedDone(sql: Sql, maxBatch: number, req: DoneRequest): Promise<TodoRow | null> {
  if (maxBatch <= 1) return (await completeMany(sql, [req]))[0];
  return lanes(sql, maxBatch).done.submit(`${req.emitEvents}\u0000${req.leaseMs}`, req);
}

/** Batches run and requests carried, per kind (tests and diagnostics). */
export function groupCommitStats(sql: Sql) {
  const l = lanesOf.get(sql);
  return { next: l?.next.stats, done: l?.done.stats };
}
