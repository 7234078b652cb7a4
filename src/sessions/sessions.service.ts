/**
 * Sessions: agents registered by a user or by their parent session (design brief §2). A session's
 * subtree root is walked once at registration (seed 000 "Scoping": stop at a session with no
 * parent, or below a parent with a system kind), so its default scope never drifts.
 */
import type { Principal } from '../auth/principal.js';
import { hashToken } from '../auth/tokens.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { noteTopics } from '../events/doorbell.js';
import { SESSION_STOPPED } from '../events/events.hub.js';
import { appendEvents, emitsFor, topicOf } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId, newToken } from '../lib/ids.js';
import { BLOCKED_BY_SQL, eventPayload } from '../todos/todos.view.js';
import { progressFor, type Progress, type ScenarioProgress } from './sessions.progress.js';

export interface SessionView {
  id: string;
  name: string;
  parentId?: string;
  rootId: string;
  /** The session's default scope: `session:<rootId>`. */
  scope: string;
  systemKind?: string;
  /** The configured Agent this session acts as (Task Graph v1), when bound. */
  agentId?: string;
  /** A subtask session (created by a graph dispatch): its parent task and subtask ids. */
  graphId?: string;
  subtaskId?: string;
  status: 'active' | 'stopped' | 'deleted';
  createdBy: string;
  createdAt: string;
  stoppedAt?: string;
  revision: number;
  /** Wide list only: done/total of the session's own subtree scope (seed 000 "In gr list"). */
  progress?: Progress;
  /** Wide list only, orchestrators only: done/total over the scenarios it orchestrates. */
  scenarioProgress?: ScenarioProgress;
}

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
  revision: number;
}

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
  };
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
}

/**
 * Registers a session and returns it with its bearer token (shown once, stored hashed).
 * A user may register a root session or a child of any session; a session may register children
 * of itself only (its `parentId` defaults to itself). Only users may set `systemKind`. `agentId`
 * binds the session to a registered Agent (design brief §8: a worker for that Agent may claim its
 * graph subtasks and act on them); a session may bind a child only to its own Agent.
 * Errors: 403 forbidden, 404 session_not_found (unknown parent), 409 session_not_active,
 * 422 agent_not_registered.
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
    const [agent] = await sql<{ id: string }[]>`select id from agents where id = ${input.agentId}`;
    if (!agent) fail('agent_not_registered', `Agent "${input.agentId}" is not registered; an operator registers it with POST /v1/agents`, { agent: input.agentId });
  }
  let rootId: string | undefined;
  const id = newId('s');
  // `!== null`, not truthiness: an empty `parentId` is a parent that does not exist (404), never
  // a root session with a dangling parent (it reached the foreign key as a 409; issue 18 fuzz).
  if (parentId !== null) {
    const [parent] = await sql<{ id: string; root_id: string; system_kind: string | null; status: string }[]>`
      select id, root_id, system_kind, status from sessions where id = ${parentId}`;
    if (!parent) throw new DomainError('session_not_found', `parent session "${parentId}" not found`);
    if (parent.status !== 'active') fail('session_not_active', `parent session "${parentId}" is ${parent.status}`);
    // A system ancestor is never crossed: a child of the orchestrator anchors to itself.
    rootId = parent.system_kind ? id : parent.root_id;
  }
  const token = newToken();
  const [row] = await sql<SessionRow[]>`
    insert into sessions (id, name, parent_id, root_id, system_kind, agent_id, token_hash, created_by)
    values (${id}, ${input.name?.trim() || id}, ${parentId}, ${rootId ?? id}, ${input.systemKind ?? null}, ${input.agentId ?? null}, ${hashToken(token)}, ${p.id})
    returning *`;
  return { session: toSession(row), token };
}

/**
 * Whether `p` may see session row `r`: users see all; a session sees its own subtree and its own
 * direct children (a Task Graph dispatch's session anchors to itself but stays its caller's child,
 * so the caller can read and stop it).
 */
function canSee(p: Principal, r: { root_id: string; parent_id?: string | null }): boolean {
  return p.kind === 'user' || p.rootId === r.root_id || r.parent_id === p.id;
}

/** Reads a session. 404 `session_not_found` when unknown or outside the caller's subtree. */
export async function getSession(sql: Db, p: Principal, id: string): Promise<SessionView> {
  const [row] = await sql<SessionRow[]>`select * from sessions where id = ${id}`;
  if (!row || !canSee(p, row)) throw new DomainError('session_not_found', `session "${id}" not found`);
  return toSession(row);
}

/**
 * Lists sessions in creation order with a keyset cursor: users see every session, a session its
 * own subtree. `status` filters (`active`, `stopped`, `deleted`). `wide` adds `progress` (and
 * `scenarioProgress` on orchestrators; see sessions.progress.ts).
 */
export async function listSessions(sql: Sql, p: Principal, opts: { status?: string; limit: number; cursor?: string; wide?: boolean }) {
  const after = opts.cursor ? (decodeCursor(opts.cursor, [/^s-[0-9a-f]{16}$/])[0] as string) : null;
  const rows = await sql<SessionRow[]>`
    select * from sessions
     where ${p.kind === 'user' ? sql`true` : sql`root_id = ${p.rootId}`}
       ${opts.status ? sql`and status = ${opts.status}` : sql``}
       ${after ? sql`and id > ${after}` : sql``}
     order by id limit ${opts.limit + 1}`;
  const more = rows.length > opts.limit;
  const page = more ? rows.slice(0, opts.limit) : rows;
  const counts = opts.wide ? await progressFor(sql, page.map((r) => ({ id: r.id, rootId: r.root_id }))) : undefined;
  return {
    sessions: page.map((r) => ({ ...toSession(r), ...(counts?.get(r.id) ?? {}) })),
    nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null,
  };
}

/**
 * Stops (or soft-deletes) a session: its token stops working and, in the same transaction, every
 * in-progress item it owns reopens with its owner cleared (an assigned item stays reserved; one
 * with unfinished dependencies reads dependency-blocked; a manual block is left alone), each with
 * its event (seed 000 "Reclaiming stranded work"; seeds-notes §1.9). Who: a user, the session
 * itself, or one of its ancestors. Idempotent for an already stopped session.
 */
export async function stopSession(sql: Sql, config: Config, p: Principal, id: string, mode: 'stopped' | 'deleted') {
  const result = await stopSessionTx(sql, config, p, id, mode);
  for (const hook of stopHooks) {
    // Best effort after the commit: what a hook records the sweep records too, a tick later.
    await hook(sql, config, id).catch(() => undefined);
  }
  return result;
}

type StopHook = (sql: Sql, config: Config, sessionId: string) => Promise<unknown>;
const stopHooks: StopHook[] = [];

/**
 * Registers work to do after a session stop commits (Task Graph: record the stopped session's
 * RUNNING dispatches as FAILED `interrupted` at once, with their events). Called at import time.
 */
export function onSessionStopped(hook: StopHook): void {
  stopHooks.push(hook);
}

async function stopSessionTx(sql: Sql, config: Config, p: Principal, id: string, mode: 'stopped' | 'deleted') {
  return withTx(sql, async (tx) => {
    const [row] = await tx<SessionRow[]>`select * from sessions where id = ${id} for update`;
    if (!row || !canSee(p, row)) throw new DomainError('session_not_found', `session "${id}" not found`);
    if (p.kind === 'session' && p.id !== id) {
      const [anc] = await tx`
        with recursive up(id, parent_id) as (
          select id, parent_id from sessions where id = ${id}
          union all select s.id, s.parent_id from sessions s join up on s.id = up.parent_id)
        select 1 from up where id = ${p.id}`;
      if (!anc) fail('forbidden', 'only a user, the session itself or an ancestor may stop a session');
    }
    const next = row.status === 'deleted' ? 'deleted' : mode;
    const [updated] = await tx<SessionRow[]>`
      update sessions set status = ${next}, stopped_at = coalesce(stopped_at, now()),
             revision = revision + case when status = ${next} then 0 else 1 end
       where id = ${id} returning *`;
    const reopened = await reopenOwnedBy(tx, config, id);
    noteStopped(tx, [id]);
    return { session: toSession(updated), reopened };
  });
}

/**
 * Stops the active sessions among `ids` in `tx` without reopening anything (Task Graph dispatch
 * sessions: what they own is the graph's to record), and notes them for the streams and caches.
 * Returns the ids it stopped.
 */
export async function markStopped(tx: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const stopped = await tx<{ id: string }[]>`
    update sessions set status = 'stopped', stopped_at = coalesce(stopped_at, now()), revision = revision + 1
     where id = any(${[...ids]}::text[]) and status = 'active' returning id`;
  noteStopped(tx, stopped.map((s) => s.id));
  return stopped.map((s) => s.id);
}

/**
 * After commit, every replica ends these sessions' open event streams and forgets their cached
 * principals (events.hub.ts). Call in the transaction that stopped them.
 */
export function noteStopped(tx: Db, ids: readonly string[]): void {
  if (ids.length) noteTopics(tx, ids.map((id) => `${SESSION_STOPPED}${id}`));
}

/**
 * Reopens every in-progress item owned by `owner` (used by stop and soft-delete), emitting `todo`
 * or `dependency-blocked` per item. Returns the reopened ids. Graph subtasks are not reopened:
 * Task Graph v1 makes a stranded subtask FAILED `interrupted`, never READY (design brief §8); the
 * graph views read it so at once and the graph sweep records it (src/graphs/execution/).
 */
export async function reopenOwnedBy(tx: Db, config: Config, owner: string): Promise<string[]> {
  const rows = await tx<{ id: string; scope: string; status: 'todo'; owner: null; revision: number; unfinished_deps: number; blocked_by: string[] }[]>`
    update todos t set status = 'todo', owner = null, progress_at = null, revision = revision + 1, updated_at = now()
     where owner = ${owner} and status = 'in-progress' and scope not like 'graph:%' and scope not like 'metagit:%'
    returning t.id, t.scope, t.status, t.owner, t.revision, t.unfinished_deps, ${tx.unsafe(BLOCKED_BY_SQL)} as blocked_by`;
  const events = rows
    .filter((r) => emitsFor(r.scope, config.todo.emitEvents))
    .map((r) => {
      const name = r.unfinished_deps > 0 ? 'dependency-blocked' : 'todo';
      return { topic: topicOf(r.scope), event: name, subjectId: r.id, payload: { ...eventPayload(name, r), reason: 'session-stopped' } };
    });
  await appendEvents(tx, events);
  return rows.map((r) => r.id);
}
