/**
 * metagit RFC-0008 "Task Graph & Intent Engine" (seed 001; docs/seeds/metagit.md) in its own vocabulary,
 * on the one engine (docs/architecture.md §D1, §D8): a TaskGraph is a container — scope `metagit:<graphId>` —
 * whose nodes are work items with their edges in `todo_dependencies`; readiness, the cycle check,
 * the cascade, the claim and the events are the engine's. The node statuses are a view:
 *
 * | engine row                         | node status |
 * | ---------------------------------- | ----------- |
 * | `cancelled_at` set (row blocked)   | cancelled   |
 * | done                               | completed   |
 * | in-progress                        | running     |
 * | blocked (note = reason)            | blocked     |
 * | todo, every dependency done        | ready       |
 * | todo, a dependency unfinished      | pending     |
 *
 * What upstream gets wrong and Coord refuses (docs/seeds/metagit.md §9): `start` is the engine's claim (owner = caller,
 * one winner); transitions out of completed or cancelled need an explicit `reopen`; a pending
 * node names what it waits on, including a cancelled dependency; writers of one graph serialise
 * on the graph's lock, so no update is lost and `TaskReady` is written exactly once per node that
 * becomes ready; expand is deterministic (metagit.outline.ts) and all-or-nothing.
 *
 * This file holds the locked write every change of a graph runs, {@link withTaskGraph}: lock, load
 * the node view, change, load again, and write the RFC's events for what changed, in the same
 * transaction, on topic `todo:metagit:<graphId>`; and the reopening of stranded starts (sweep and
 * session stop). The use cases are metagit.intents.ts, metagit.graphs.ts and metagit.nodes.ts.
 */
import type postgres from 'postgres';
import { lockXact, teamLock } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { noteTopics } from '../db/doorbell.js';
import { appendEvents, streamKey, topicOf, type EventInput } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { releaseClaims } from '../todos/todos.repo.js';
import type { Ctx } from '../todos/todos.context.js';
import { type Principal, systemPrincipal } from '../auth/principal.js';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import type { StopHook } from '../sessions/sessions.service.js';
import { SLUG_ID } from './metagit.outline.js';
import { actorOf } from '../auth/actor.js';
import { leaseExpiredSql } from '../todos/todos.view.js';
import { nodeStatus, toGraph, toSummary, graphNotFound, type GraphRow, type NodeRow } from './metagit.view.js';

export const scopeOf = (graphId: string) => `metagit:${graphId}`;

/** The lock of one team's graph (src/db/locks.ts `teamLock`). */
export const graphLock = (teamId: string, graphId: string) => teamLock(teamId, scopeOf(graphId));

/**
 * The graph if `ctx.principal` may see it (users; sessions of the creating session's subtree), else
 * 404. Only the caller's team is searched: another team's graph reads as missing.
 */
export async function loadGraph(ctx: Ctx, db: postgres.Sql | postgres.TransactionSql, id: string): Promise<GraphRow> {
  if (!SLUG_ID.test(id)) graphNotFound(id);
  const [g] = await db<GraphRow[]>`
    select g.*, cs.root_id as creator_root from metagit_graphs g left join sessions cs on cs.id = g.created_by
     where g.team_id = ${ctx.principal.teamId} and g.id = ${id}`;
  const p = ctx.principal;
  if (!g || (p.kind === 'session' && (p.graphId !== null || g.creator_root !== p.rootId))) graphNotFound(id);
  return g;
}

/** The nodes of graph `id` of team `teamId`, by position, with their dependencies' node ids. */
export async function loadNodes(db: postgres.Sql | postgres.TransactionSql, teamId: string, id: string): Promise<NodeRow[]> {
  const rows = await db<(Omit<NodeRow, 'depends_on'> & { depends_on?: string[] })[]>`
    select n.node_id, n.todo_id, n.intent_id, n.project, n.repository, n.agent_id, n.acl, n.priority, n.cancelled_at, n.created_at,
           t.title, t.status, t.owner, t.note, t.unfinished_deps, t.revision, t.updated_at, t.position
      from metagit_nodes n join todos t on t.team_id = n.team_id and t.id = n.todo_id
     where n.team_id = ${teamId} and n.graph_id = ${id}
     order by t.position, n.node_id`;
  // The edges in one query (not one subquery per node): node id → its dependencies' node ids.
  const edges = await db<{ node_id: string; dependency: string }[]>`
    select n.node_id, dn.node_id as dependency
      from metagit_nodes n join todo_dependencies e on e.todo_id = n.todo_id
      join metagit_nodes dn on dn.team_id = n.team_id and dn.todo_id = e.dependency_id
     where n.team_id = ${teamId} and n.graph_id = ${id}`;
  const deps = new Map<string, string[]>();
  for (const e of edges) deps.set(e.node_id, [...(deps.get(e.node_id) ?? []), e.dependency]);
  return rows.map((r) => ({ ...r, depends_on: (deps.get(r.node_id) ?? []).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) }));
}

export function event(g: GraphRow, type: string, payload: Record<string, unknown>, revision: number): EventInput {
  const nodeId = payload.nodeId as string | undefined;
  return {
    topic: topicOf(g.scope),
    event: type,
    subjectId: nodeId ? `${g.id}/${nodeId}` : g.id,
    payload: { event: type, id: nodeId ? `${g.id}/${nodeId}` : g.id, scope: g.scope, status: payload.status ?? null, revision, graphId: g.id, ...payload },
  };
}

interface Change<T> {
  result: T;
  /** RFC events the operation wrote (TaskStarted, TaskBlocked, …), before the derived TaskReady ones. */
  events?: { type: string; payload: Record<string, unknown> }[];
}

/**
 * One write to graph `id` (see the file header): under the graph's lock, `fn` changes engine rows;
 * then `TaskReady` for every node that became ready, and the graph's status when it moved.
 */
export async function withTaskGraph<T>(
  ctx: Ctx,
  id: string,
  fn: (tx: postgres.TransactionSql, g: GraphRow, nodes: Map<string, NodeRow>) => Promise<Change<T>>,
) {
  if (!SLUG_ID.test(id)) graphNotFound(id);
  return withTx(ctx.sql, async (tx) => {
    await lockXact(tx, graphLock(ctx.principal.teamId, id));
    const g = await loadGraph(ctx, tx, id);
    const before = await loadNodes(tx, g.team_id, id);
    const previous = g.status;
    const stranded = await reopenStranded(tx, ctx.config, g);
    const current = stranded.length ? await loadNodes(tx, g.team_id, id) : before;
    const op = await fn(tx, g, new Map(current.map((r) => [r.node_id, r])));
    const after = await loadNodes(tx, g.team_id, id);
    const statusOf = (rows: NodeRow[]) => new Map(rows.map((r) => [r.node_id, nodeStatus(r)]));
    const was = statusOf(before);
    const nowReady = after.filter((r) => nodeStatus(r) === 'ready' && was.get(r.node_id) !== 'ready').map((r) => r.node_id);
    const demoted = after.filter((r) => nodeStatus(r) === 'pending' && was.get(r.node_id) === 'ready').map((r) => r.node_id);
    const status = g.status === 'cancelled' ? 'cancelled' : after.length > 0 && after.every((r) => nodeStatus(r) === 'completed') ? 'completed' : 'active';
    const changed = stranded.length > 0 || (op.events?.length ?? 0) > 0 || nowReady.length > 0 || demoted.length > 0 || status !== previous;
    let record = g;
    if (changed) {
      const [u] = await tx<GraphRow[]>`
        update metagit_graphs set status = ${status}, updated_at = now(), revision = revision + 1
         where team_id = ${g.team_id} and id = ${id} returning *`;
      record = { ...u, creator_root: g.creator_root };
      const events = stranded.map((s) =>
        event(record, 'TaskReopened', { nodeId: s.nodeId, from: 'running', cause: s.cause, status: 'ready' }, record.revision),
      );
      events.push(...(op.events ?? []).map((e) => event(record, e.type, e.payload, record.revision)));
      for (const nodeId of nowReady) events.push(event(record, 'TaskReady', { nodeId, status: 'ready' }, record.revision));
      for (const nodeId of demoted) events.push(event(record, 'TaskPending', { nodeId, status: 'pending' }, record.revision));
      if (status !== previous) events.push(event(record, 'TaskGraphStatusChanged', { from: previous, to: status, status }, record.revision));
      await appendEvents(tx, g.team_id, events, actorOf(ctx.principal));
    }
    return { result: op.result, graph: toGraph(record, after), summary: toSummary(record, after) };
  });
}

/**
 * Reopens the graph's running nodes whose starter is gone — its session stopped, or its claim
 * lease (`claim_lease`) expired — so they read ready again: a metagit start is a todo claim, and
 * stranded claims come back (seed 000). Done by every write to the graph, the session stop, and
 * the sweep, so the RFC's events (`TaskReopened`, `TaskReady`) are written for it.
 */
async function reopenStranded(tx: postgres.TransactionSql, config: Config, g: GraphRow): Promise<{ nodeId: string; cause: string }[]> {
  const ms = config.todo.claimLeaseMs;
  const released = await releaseClaims(
    tx,
    tx`select t.id, t.owner from todos t left join sessions os on os.id = t.owner
        where t.team_id = ${g.team_id} and t.scope = ${g.scope} and t.status = 'in-progress'
          and (os.status is distinct from 'active' or ${leaseExpiredSql(tx, ms)})
        for update of t`,
    tx`true`,
  );
  if (released.length === 0) return [];
  touched(tx, g);
  // The cause, as the RFC's events name it: the starter's session is gone, or only its lease ran out.
  const active = new Set(
    (await tx<{ id: string }[]>`select id from sessions where id = any(${released.map((r) => r.former_owner)}::text[]) and status = 'active'`).map((r) => r.id),
  );
  const cause = new Map(released.map((r) => [r.id, active.has(r.former_owner) ? 'lease-expired' : 'session-stopped']));
  const rows = await tx<{ node_id: string; todo_id: string }[]>`
    select node_id, todo_id from metagit_nodes where team_id = ${g.team_id} and todo_id = any(${[...cause.keys()]}::text[]) order by node_id`;
  return rows.map((r) => ({ nodeId: r.node_id, cause: cause.get(r.todo_id)! }));
}

/**
 * The principals the sweep and the session-stop hook act as: an operator of the team of the graph
 * they act on, so each graph is found in, and its events written to, its own team.
 */
const SYSTEM = (teamId: string): Principal => systemPrincipal('sweep:metagit-stranded', teamId);

const ON_STOP = (teamId: string): Principal => systemPrincipal('on-session-stopped', teamId);

/** Reopens stranded starts of every graph, of every team, that has one (the sweep's step; see {@link reopenStranded}). */
export async function sweepStrandedNodes(sql: Sql, config: Config): Promise<number> {
  const ms = config.todo.claimLeaseMs;
  const graphs = await sql<{ team_id: string; id: string; n: number }[]>`
    select t.team_id, substr(t.scope, 9) as id, count(*)::int as n from todos t left join sessions os on os.id = t.owner
     where t.status = 'in-progress' and t.scope like 'metagit:%'
       and (os.status is distinct from 'active' or ${leaseExpiredSql(sql, ms)})
     group by 1, 2 limit 1000`;
  for (const g of graphs) await withTaskGraph({ sql, config, principal: SYSTEM(g.team_id) }, g.id, async () => ({ result: null }));
  return graphs.reduce((a, g) => a + g.n, 0);
}

// A stopped session's started nodes come back at once, with their events.
// buildApp registers it (src/modules.ts `wireModules`).

export const metagitStopHook: StopHook = async (sql, config, sessionId) => {
  const graphs = await sql<{ team_id: string; id: string }[]>`
    select distinct team_id, substr(scope, 9) as id from todos where owner = ${sessionId} and status = 'in-progress' and scope like 'metagit:%'`;
  for (const g of graphs) await withTaskGraph({ sql, config, principal: ON_STOP(g.team_id) }, g.id, async () => ({ result: null }));
};

export function nodeOf(nodes: Map<string, NodeRow>, graphId: string, nodeId: string): NodeRow {
  const n = nodes.get(nodeId);
  if (!n) fail('task_node_not_found', `task node not found: ${graphId}/${nodeId.slice(0, 128)}`);
  return n;
}

export function refuseStatus(graphId: string, n: NodeRow, act: string): never {
  const status = nodeStatus(n);
  if (status === 'pending') {
    throw new DomainError('dependency_blocked', `node ${graphId}/${n.node_id} is pending: it waits on ${n.depends_on.join(', ')}`, { dependsOn: n.depends_on });
  }
  throw new DomainError(
    'invalid_transition',
    `node ${graphId}/${n.node_id} is ${status}: cannot ${act} it${status === 'completed' || status === 'cancelled' ? ' (reopen it first)' : ''}`,
    { nodeStatus: status },
  );
}

/** 409 when the graph is cancelled: its nodes do not move until the graph is reopened. */
export function requireActive(g: GraphRow): void {
  if (g.status === 'cancelled') fail('invalid_transition', `task graph "${g.id}" is cancelled: reopen it (POST /v1/task-graphs/${g.id}/reopen) first`);
}

/** Wakes this replica's and other replicas' readers of the graph's topic after commit (engine writes). */
export function touched(tx: postgres.TransactionSql, g: GraphRow): void {
  noteTopics(tx, [streamKey(g.team_id, topicOf(g.scope))]);
}
