/**
 * Sessions: agents registered by a user or by their parent session (docs/architecture.md §D2). A session's
 * subtree root is walked once at registration (seed 000 "Scoping": stop at a session with no
 * parent, or below a parent with a system kind), so its default scope never drifts.
 */
import { type Principal, systemPrincipal } from '../auth/principal.js';
import { insertFirstToken } from '../tokens/tokens.repo.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { noteTopics } from '../db/doorbell.js';
import { SESSION_STOPPED } from '../events/events.hub.js';
import { appendEvents, appendTeamEvents, auditTopic, emitsFor, topicOf, type EventInput } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId, newToken } from '../lib/ids.js';
import { backToTodoEvent, eventPayload, selfManagedScopeSql } from '../todos/todos.view.js';
import { holdingFor } from './sessions.holding.js';
import { ALIVE_SQL, SILENT_SQL } from './sessions.liveness.js';
import { progressFor } from './sessions.progress.js';
import type { Session } from './sessions.schemas.js';
import { lockSubtree } from './sessions.subtree.js';
import type { z } from 'zod';
import { actorOf, type Actor } from '../auth/actor.js';
import { releaseClaims } from '../todos/todos.repo.js';

/**
 * Why a session stopped: `requested` (POST …/stop or DELETE on it), `silent` (auto-stopped: no
 * authenticated call for longer than its heartbeat interval), `ancestor` (an ancestor's stop,
 * delete or auto-stop took its subtree), `dispatch-ended` (a Task Graph dispatch's session, ended
 * by its graph).
 */
export type StopReason = NonNullable<SessionView['stopReason']>;

/** What the session routes return: the type of the `Session` zod schema (sessions.schemas.ts). */
export type SessionView = z.output<typeof Session>;

interface SessionRow {
  id: string;
  name: string;
  parent_id: string | null;
  root_id: string;
  system_kind: string | null;
  agent_id: string | null;
  graph_id: string | null;
  subtask_id: string | null;
  status: 'active' | 'stopped' | 'deleted';
  created_by: string;
  created_at: Date;
  stopped_at: Date | null;
  stop_reason: StopReason | null;
  revision: number;
  last_seen_at: Date | null;
  heartbeat_interval_ms: number | null;
  /** Computed by the query (`ALIVE_SQL`). */
  alive: boolean;
}

/** The columns every session read selects: the row and whether it is alive. */
const ROW = `s.*, ${ALIVE_SQL} as alive`;

export function toSession(r: SessionRow): SessionView {
  const v: SessionView = {
    id: r.id,
    name: r.name,
    rootId: r.root_id,
    scope: `session:${r.root_id}`,
    status: r.status,
    createdBy: r.created_by,
    createdAt: r.created_at.toISOString(),
    revision: r.revision,
    alive: r.alive,
  };
  if (r.last_seen_at) v.lastSeenAt = r.last_seen_at.toISOString();
  if (r.heartbeat_interval_ms !== null) v.heartbeatIntervalMs = r.heartbeat_interval_ms;
  if (r.stop_reason) v.stopReason = r.stop_reason;
  if (r.parent_id) v.parentId = r.parent_id;
  if (r.system_kind) v.systemKind = r.system_kind;
  if (r.agent_id) v.agentId = r.agent_id;
  if (r.graph_id) v.graphId = r.graph_id;
  if (r.subtask_id) v.subtaskId = r.subtask_id;
  if (r.stopped_at) v.stoppedAt = r.stopped_at.toISOString();
  return v;
}

export interface CreateSessionInput {
  name?: string;
  parentId?: string;
  systemKind?: string;
  /** Binds the session to a registered Agent (Task Graph v1 implementer or reviewer identity). */
  agentId?: string;
  /**
   * Auto-stop: a session with no authenticated call for longer than this (ms, 5 s – 24 h) is
   * stopped by the sweep like `POST /v1/sessions/{id}/stop`. Absent/null: never auto-stopped.
   */
  heartbeatIntervalMs?: number | null;
}

/**
 * Registers a session and returns it with its bearer token (shown once, stored hashed).
 * A user may register a root session or a child of any session; a session may register children
 * of itself only (its `parentId` defaults to itself). Only users may set `systemKind`. `agentId`
 * binds the session to a registered Agent (docs/architecture.md §D8: a worker for that Agent may claim its
 * graph subtasks and act on them); a session may bind a child only to its own Agent.
 * Errors: 403 forbidden, 404 session_not_found (unknown parent), 409 session_not_active,
 * 422 agent_not_registered. The parent row is read `FOR KEY SHARE`, so a concurrent stop of the
 * parent either waits for this registration (and then stops the new child with its subtree) or
 * commits first (and this answers 409).
 */
export async function createSession(sql: Sql, p: Principal, input: CreateSessionInput): Promise<{ session: SessionView; token: string }> {
  let parentId = input.parentId ?? null;
  if (p.kind === 'session') {
    if (p.graphId !== null) fail('forbidden', 'a Task Graph dispatch session cannot register sessions; its runner or the graph’s owners can');
    parentId ??= p.id;
    if (parentId !== p.id) fail('forbidden', 'a session may register children of itself only');
    if (input.systemKind) fail('forbidden', 'only a user may register a system session');
    if (input.agentId !== undefined && input.agentId !== p.agentId) {
      fail('forbidden', 'a session may bind a child only to its own Agent; an operator (user) binds sessions to other Agents');
    }
  }
  if (input.agentId !== undefined) {
    const [agent] = await sql<{ id: string }[]>`select id from agents where team_id = ${p.teamId} and id = ${input.agentId}`;
    if (!agent)
      fail('agent_not_registered', `Agent "${input.agentId}" is not registered; an operator registers it with POST /v1/agents`, { agent: input.agentId });
  }
  const id = newId('s');
  const token = newToken();
  const row = await withTx(sql, async (tx) => {
    let rootId: string | undefined;
    // `!== null`, not truthiness: an empty `parentId` is a parent that does not exist (404), never
    // a root session with a dangling parent (it reached the foreign key as a 409; found by test/http/fuzz.test.ts).
    if (parentId !== null) {
      const [parent] = await tx<{ id: string; root_id: string; system_kind: string | null; status: string }[]>`
        select id, root_id, system_kind, status from sessions where id = ${parentId} and team_id = ${p.teamId} for key share`;
      if (!parent) throw new DomainError('session_not_found', `parent session "${parentId}" not found`);
      if (parent.status !== 'active') fail('session_not_active', `parent session "${parentId}" is ${parent.status}`);
      // A system ancestor is never crossed: a child of the orchestrator anchors to itself.
      rootId = parent.system_kind ? id : parent.root_id;
    }
    const [r] = await tx<SessionRow[]>`
      insert into sessions as s (id, name, parent_id, root_id, system_kind, agent_id, created_by, heartbeat_interval_ms, team_id)
      values (${id}, ${input.name?.trim() || id}, ${parentId}, ${rootId ?? id}, ${input.systemKind ?? null}, ${input.agentId ?? null}, ${p.id},
              ${input.heartbeatIntervalMs ?? null}, ${p.teamId})
      returning ${tx.unsafe(ROW)}`;
    await insertFirstToken(tx, p.teamId, { sessionId: id, createdBy: p.id, secret: token }, actorOf(p));
    await recordSessionEvents(tx, p.teamId, actorOf(p), 'session-created', [{ id, name: r.name }]);
    return r;
  });
  return { session: { ...toSession(row), holding: { count: 0, items: [] } }, token };
}

/**
 * Whether `p` may see session row `r`: users see all; a session sees its own subtree and its own
 * direct children (a Task Graph dispatch's session anchors to itself but stays its caller's child,
 * so the caller can read and stop it).
 */
function canSee(p: Principal, r: { root_id: string; parent_id?: string | null }): boolean {
  return p.kind === 'user' || p.rootId === r.root_id || r.parent_id === p.id;
}

/**
 * Reads a session with its liveness and what it holds. 404 `session_not_found` when unknown or
 * outside the caller's subtree.
 */
export async function getSession(sql: Db, p: Principal, id: string, leaseMs: number): Promise<SessionView> {
  const [row] = await sql<SessionRow[]>`select ${sql.unsafe(ROW)} from sessions s where id = ${id} and team_id = ${p.teamId}`;
  if (!row || !canSee(p, row)) throw new DomainError('session_not_found', `session "${id}" not found`);
  const holding = await holdingFor(sql, [id], leaseMs);
  return { ...toSession(row), holding: holding.get(id)! };
}

/**
 * Lists sessions in creation order with a keyset cursor: users see every session of their team, a session its
 * own subtree. `status` filters (`active`, `stopped`, `deleted`); `alive` filters on liveness
 * (see `ALIVE_SQL`). Every session carries `alive`, `lastSeenAt` and `holding`; `wide` adds
 * `progress` (and `scenarioProgress` on orchestrators; see sessions.progress.ts).
 */
export async function listSessions(
  sql: Sql,
  p: Principal,
  opts: { status?: string; alive?: boolean; limit: number; cursor?: string; wide?: boolean; leaseMs: number },
) {
  const after = opts.cursor ? (decodeCursor(opts.cursor, [/^s-[0-9a-f]{16}$/])[0] as string) : null;
  const rows = await sql<SessionRow[]>`
    select ${sql.unsafe(ROW)} from sessions s
     where team_id = ${p.teamId} and ${p.kind === 'user' ? sql`true` : sql`root_id = ${p.rootId}`}
       ${opts.status ? sql`and status = ${opts.status}` : sql``}
       ${opts.alive === undefined ? sql`` : opts.alive ? sql`and ${sql.unsafe(ALIVE_SQL)}` : sql`and not ${sql.unsafe(ALIVE_SQL)}`}
       ${after ? sql`and id > ${after}` : sql``}
     order by id limit ${opts.limit + 1}`;
  const more = rows.length > opts.limit;
  const page = more ? rows.slice(0, opts.limit) : rows;
  const [counts, holding] = await Promise.all([
    opts.wide
      ? progressFor(
          sql,
          p.teamId,
          page.map((r) => ({ id: r.id, rootId: r.root_id })),
        )
      : undefined,
    holdingFor(
      sql,
      page.map((r) => r.id),
      opts.leaseMs,
    ),
  ]);
  return {
    sessions: page.map((r) => ({ ...toSession(r), holding: holding.get(r.id)!, ...(counts?.get(r.id) ?? {}) })),
    nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null,
  };
}

/** What a stop answers: the session, every item reopened across its subtree, and the descendants it stopped. */
export interface StopResult {
  session: SessionView;
  /** Items reopened from the claims of the session and of the descendants this stop stopped. */
  reopened: string[];
  /** The active descendants this stop stopped (all of them, at any depth), in id order. */
  stoppedDescendants: string[];
}

/**
 * Stops (or soft-deletes) a session and stops its whole active subtree with it, in ONE
 * transaction: every token of the subtree stops working at once on every replica, and every
 * in-progress item the session or a stopped descendant owns reopens with its owner cleared (an
 * assigned item stays reserved; one with unfinished dependencies reads dependency-blocked; a
 * manual block is left alone), each with its event (seed 000 "Reclaiming stranded work";
 * docs/seeds/todo-list.md §9). Descendants are stopped, never deleted, also when the session is deleted:
 * the seed defines soft delete for the session asked about only, and a stopped descendant keeps
 * its history readable. A descendant that is a Task Graph dispatch's session is stopped without
 * reopening anything (its graph records the dispatch FAILED `interrupted`, as `markStopped`).
 * After the commit the stop hooks run for every session stopped. Who: a user, the session itself,
 * or one of its ancestors. Idempotent for an already stopped session (its still active
 * descendants, if any, are stopped). Errors: 404 session_not_found, 403 forbidden.
 */
export async function stopSession(sql: Sql, config: Config, p: Principal, id: string, mode: 'stopped' | 'deleted'): Promise<StopResult> {
  const result = (await stopSessionTx(sql, config, p, id, mode, { reason: 'requested' }))!;
  await runStopHooks(sql, config, [id, ...result.stoppedDescendants]);
  return result;
}

/**
 * Auto-stop: stops session `id` exactly as `POST /v1/sessions/{id}/stop` would (its
 * subtree, reopened claims with their events, tokens refused, stop hooks) if, under its row lock,
 * it is still active and silent for longer than its heartbeat interval (`now() - last_seen_at >
 * heartbeat_interval_ms`); its stop reason reads `silent` and its own reopened items' events say
 * `reason: 'session-silent'`. Returns null when it was no longer silent (a call landed) or not
 * active.
 */
export async function stopSilentSession(sql: Sql, config: Config, id: string): Promise<StopResult | null> {
  const [s] = await sql<{ team_id: string }[]>`select team_id from sessions where id = ${id}`;
  if (!s) return null;
  // The sweep's principal: an operator-like caller of the session's team, which may stop it.
  const sweep = systemPrincipal('sweep:session-liveness', s.team_id);
  const result = await stopSessionTx(sql, config, sweep, id, 'stopped', { reason: 'silent', onlyIfSilent: true });
  if (result) await runStopHooks(sql, config, [id, ...result.stoppedDescendants]);
  return result;
}

async function runStopHooks(sql: Sql, config: Config, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    for (const hook of stopHooks) {
      // Best effort after the commit: what a hook records the sweep records too, a tick later.
      await hook(sql, config, id).catch(() => undefined);
    }
  }
}

export type StopHook = (sql: Sql, config: Config, sessionId: string) => Promise<unknown>;
const stopHooks = new Set<StopHook>();

/**
 * Registers work to do after a session stop commits (Task Graph: record the stopped session's
 * RUNNING dispatches as FAILED `interrupted` at once, with their events). Called by buildApp only
 * (src/modules.ts `wireModules`); registering the same hook again is a no-op (the registry is
 * process-wide). A subtree stop runs every hook once per stopped session.
 */
export function onSessionStopped(hook: StopHook): void {
  stopHooks.add(hook);
}

/** How many stop hooks are registered (tests read it). */
export function stopHookCount(): number {
  return stopHooks.size;
}

async function stopSessionTx(
  sql: Sql,
  config: Config,
  p: Principal,
  id: string,
  mode: 'stopped' | 'deleted',
  opts: { reason: 'requested' | 'silent'; onlyIfSilent?: boolean },
): Promise<StopResult | null> {
  return withTx(sql, async (tx) => {
    const [probe] = await tx<
      { id: string; root_id: string; parent_id: string | null }[]
    >`select id, root_id, parent_id from sessions where id = ${id} and team_id = ${p.teamId}`;
    if (!probe || !canSee(p, probe)) throw new DomainError('session_not_found', `session "${id}" not found`);
    if (p.kind === 'session' && p.id !== id) {
      const [anc] = await tx`
        with recursive up(id, parent_id) as (
          select id, parent_id from sessions where id = ${id}
          union all select s.id, s.parent_id from sessions s join up on s.id = up.parent_id)
        select 1 from up where id = ${p.id}`;
      if (!anc) fail('forbidden', 'only a user, the session itself or an ancestor may stop a session');
    }
    const ids = await lockSubtree(tx, id);
    const rows = await tx<(SessionRow & { silent: boolean })[]>`
      select ${tx.unsafe(ROW)}, ${tx.unsafe(SILENT_SQL)} as silent from sessions s where id = any(${ids}::text[]) order by id`;
    const target = rows.find((r) => r.id === id)!;
    if (opts.onlyIfSilent && !target.silent) return null;
    const next = target.status === 'deleted' ? 'deleted' : mode;
    const [updated] = await tx<SessionRow[]>`
      update sessions s set status = ${next}, stopped_at = coalesce(stopped_at, now()), stop_reason = coalesce(stop_reason, ${opts.reason}),
             revision = revision + case when status = ${next} then 0 else 1 end
       where id = ${id} returning ${tx.unsafe(ROW)}`;
    const descendants = rows.filter((r) => r.id !== id && r.status === 'active');
    const descendantIds = descendants.map((r) => r.id);
    if (descendantIds.length > 0) {
      await tx`
        update sessions set status = 'stopped', stopped_at = now(), stop_reason = 'ancestor', revision = revision + 1
         where id = any(${descendantIds}::text[])`;
    }
    // Dispatch sessions' claims are their graph's to record (markStopped's semantics).
    const owners = new Map<string, string>([[id, opts.reason === 'silent' ? 'session-silent' : 'session-stopped']]);
    for (const d of descendants) if (d.graph_id === null) owners.set(d.id, 'session-stopped');
    const reopened = await reopenOwnedBy(tx, config, owners, actorOf(p));
    await recordSessionEvents(tx, p.teamId, actorOf(p), 'session-stopped', [
      ...(target.status === next ? [] : [{ id, status: next, reason: opts.reason }]),
      ...descendantIds.map((d) => ({ id: d, status: 'stopped', reason: 'ancestor' })),
    ]);
    noteStopped(tx, [id, ...descendantIds]);
    return { session: toSession(updated), reopened, stoppedDescendants: descendantIds };
  });
}

/**
 * Stops the active sessions among `ids` in `tx` without reopening anything (Task Graph dispatch
 * sessions: what they own is the graph's to record; stop reason `dispatch-ended`), and notes them
 * for the streams and caches, recording `actor` as who stopped them. Locks in id order (see
 * sessions.subtree.ts). Returns the ids it stopped.
 */
export async function markStopped(tx: Db, ids: readonly string[], actor: Actor): Promise<string[]> {
  if (ids.length === 0) return [];
  const stopped = await tx<{ id: string; team_id: string }[]>`
    update sessions s set status = 'stopped', stopped_at = coalesce(s.stopped_at, now()), stop_reason = coalesce(s.stop_reason, 'dispatch-ended'), revision = s.revision + 1
      from (select id from sessions where id = any(${[...ids]}::text[]) and status = 'active' order by id for update) x
     where s.id = x.id and s.status = 'active' returning s.id, s.team_id`;
  noteStopped(
    tx,
    stopped.map((s) => s.id),
  );
  await appendTeamEvents(
    tx,
    stopped.map((s) => ({ teamId: s.team_id, ...sessionEvent('session-stopped', { id: s.id, status: 'stopped', reason: 'dispatch-ended' }) })),
    actor,
  );
  return stopped.map((s) => s.id);
}

/**
 * The audit's record of sessions created or stopped by `actor`, in `tx` (topic `audit:sessions`):
 * `session-created` with the name, `session-stopped` with the new status (`stopped`,
 * `deleted`) and the stop reason.
 */
export async function recordSessionEvents(
  tx: Db,
  teamId: string,
  actor: Actor,
  event: 'session-created' | 'session-stopped',
  sessions: readonly { id: string; name?: string; status?: string; reason?: string }[],
): Promise<void> {
  await appendEvents(
    tx,
    teamId,
    sessions.map((s) => sessionEvent(event, s)),
    actor,
  );
}

/** One session's audit event (topic `audit:sessions`). */
function sessionEvent(event: 'session-created' | 'session-stopped', s: { id: string; name?: string; status?: string; reason?: string }): EventInput {
  return { topic: auditTopic('sessions'), event, subjectId: s.id, payload: { event, ...s } };
}

/**
 * After commit, every replica ends these sessions' open event streams and forgets their cached
 * principals (events.hub.ts). Call in the transaction that stopped them.
 */
export function noteStopped(tx: Db, ids: readonly string[]): void {
  if (ids.length)
    noteTopics(
      tx,
      ids.map((id) => `${SESSION_STOPPED}${id}`),
    );
}

/**
 * Reopens every in-progress item owned by the sessions of `owners` (session id → the event's
 * `reason`; used by stop, soft-delete and auto-stop), emitting `todo` or `dependency-blocked` per
 * item with `reason` and `formerOwner`. Returns the reopened ids. Graph subtasks are not
 * reopened: Task Graph v1 makes a stranded subtask FAILED `interrupted`, never READY (docs/architecture.md
 * §D8); the graph views read it so at once and the graph sweep records it (src/graphs/execution/).
 * `actor` is who stopped them (the audit).
 */
export async function reopenOwnedBy(tx: Db, config: Config, owners: ReadonlyMap<string, string>, actor: Actor): Promise<string[]> {
  if (owners.size === 0) return [];
  const rows = await releaseClaims(
    tx,
    tx`select id, owner from todos
        where owner = any(${[...owners.keys()]}::text[]) and status = 'in-progress' and ${selfManagedScopeSql(tx, tx`scope`)}
        order by id for update`,
    tx`t.owner = x.owner and t.status = 'in-progress'`,
  );
  const events = rows
    .filter((r) => emitsFor(r.scope, config.todo.emitEvents))
    .map((r) => {
      const name = backToTodoEvent(r);
      return {
        teamId: r.team_id,
        topic: topicOf(r.scope),
        event: name,
        subjectId: r.id,
        payload: { ...eventPayload(name, r), reason: owners.get(r.former_owner)!, formerOwner: r.former_owner },
      };
    });
  await appendTeamEvents(tx, events, actor);
  return rows.map((r) => r.id);
}
