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
 * Every write runs {@link withTaskGraph}: lock, load the node view, change, load again, and write
 * the RFC's events for what changed, in the same transaction, on topic `todo:metagit:<graphId>`.
 */
import type postgres from 'postgres';
import { lockXact, teamLock } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { noteTopics } from '../db/doorbell.js';
import { appendEvents, auditTopic, emitsFor, streamKey, topicOf, type EventInput } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId } from '../lib/ids.js';
import { blockItems, cascade, completeContractRow, guardedClaim, releaseClaims, reopenItems, startItem } from '../todos/todos.repo.js';
import type { Ctx } from '../todos/todos.context.js';
import { type Principal, systemPrincipal } from '../auth/principal.js';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { unstorable } from '../http/text.js';
import type { StopHook } from '../sessions/sessions.service.js';
import { expandOutline, slug, SLUG_ID } from './metagit.outline.js';
import { actorOf } from '../auth/actor.js';
import { leaseExpiredSql } from '../todos/todos.view.js';
import { insertEdges, insertItems } from '../todos/todos.repo.js';

export type NodeStatus = 'pending' | 'ready' | 'blocked' | 'running' | 'completed' | 'cancelled';

const scopeOf = (graphId: string) => `metagit:${graphId}`;
/** The lock of one team's graph (src/db/locks.ts `teamLock`). */
const graphLock = (teamId: string, graphId: string) => teamLock(teamId, scopeOf(graphId));
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

interface GraphRow {
  id: string;
  scope: string;
  title: string;
  root_intent_id: string;
  objective_id: string | null;
  handoff_id: string | null;
  status: 'active' | 'completed' | 'cancelled';
  created_by: string;
  created_at: Date;
  updated_at: Date;
  revision: number;
  /** The team of its creator. */
  team_id: string;
  creator_root?: string | null;
}

interface NodeRow {
  node_id: string;
  todo_id: string;
  title: string;
  status: 'todo' | 'in-progress' | 'done' | 'blocked';
  owner: string | null;
  note: string | null;
  unfinished_deps: number;
  revision: number;
  intent_id: string | null;
  project: string | null;
  repository: string | null;
  agent_id: string | null;
  acl: unknown;
  priority: number;
  cancelled_at: Date | null;
  created_at: Date;
  updated_at: Date;
  position: number;
  depends_on: string[];
}

/** The node status view (file header). */
export function nodeStatus(r: Pick<NodeRow, 'status' | 'unfinished_deps' | 'cancelled_at'>): NodeStatus {
  if (r.cancelled_at) return 'cancelled';
  switch (r.status) {
    case 'done':
      return 'completed';
    case 'in-progress':
      return 'running';
    case 'blocked':
      return 'blocked';
    default:
      return r.unfinished_deps > 0 ? 'pending' : 'ready';
  }
}

/** A node as the API shows it. `waitingOn` names the unfinished dependencies (with their status). */
function toNode(graphId: string, r: NodeRow, byId: Map<string, NodeRow>) {
  const status = nodeStatus(r);
  const waitingOn =
    status === 'pending'
      ? r.depends_on.filter((d) => byId.get(d)?.status !== 'done').map((d) => ({ nodeId: d, status: byId.get(d) ? nodeStatus(byId.get(d)!) : 'pending' }))
      : [];
  return {
    graphId,
    nodeId: r.node_id,
    title: r.title,
    status,
    dependsOn: r.depends_on,
    waitingOn,
    blockerReason:
      status === 'blocked'
        ? r.note
        : status === 'pending' && waitingOn.some((w) => w.status === 'cancelled')
          ? `waiting on cancelled dependencies: ${waitingOn
              .filter((w) => w.status === 'cancelled')
              .map((w) => w.nodeId)
              .join(', ')}`
          : null,
    owner: status === 'running' || status === 'blocked' ? r.owner : null,
    intentId: r.intent_id,
    project: r.project,
    repository: r.repository,
    agentId: r.agent_id,
    acl: r.acl ?? null,
    priority: r.priority,
    todoId: r.todo_id,
    revision: r.revision,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export type TaskNodeView = ReturnType<typeof toNode>;

function toGraph(g: GraphRow, rows: NodeRow[]) {
  const byId = new Map(rows.map((r) => [r.node_id, r]));
  const nodes = rows.map((r) => toNode(g.id, r, byId));
  const counts: Record<NodeStatus, number> = { pending: 0, ready: 0, blocked: 0, running: 0, completed: 0, cancelled: 0 };
  for (const n of nodes) counts[n.status]++;
  return {
    graphId: g.id,
    title: g.title,
    rootIntentId: g.root_intent_id,
    objectiveId: g.objective_id,
    handoffId: g.handoff_id,
    status: g.status,
    scope: g.scope,
    counts,
    nodes,
    createdBy: g.created_by,
    createdAt: g.created_at.toISOString(),
    updatedAt: g.updated_at.toISOString(),
    revision: g.revision,
  };
}

export type TaskGraphView = ReturnType<typeof toGraph>;

/** What a write answers besides its node: the graph's status, counts and ready set, not every node. */
function toSummary(g: GraphRow, rows: NodeRow[]) {
  const { nodes: _nodes, ...rest } = toGraph(g, rows);
  return { ...rest, readyNow: rows.filter((r) => nodeStatus(r) === 'ready').map((r) => r.node_id) };
}

export type TaskGraphSummaryView = ReturnType<typeof toSummary>;

function graphNotFound(id: string): never {
  fail('task_graph_not_found', `task graph not found: ${id.slice(0, 128)}`);
}

/**
 * The graph if `ctx.principal` may see it (users; sessions of the creating session's subtree), else
 * 404. Only the caller's team is searched: another team's graph reads as missing.
 */
async function loadGraph(ctx: Ctx, db: postgres.Sql | postgres.TransactionSql, id: string): Promise<GraphRow> {
  if (!SLUG_ID.test(id)) graphNotFound(id);
  const [g] = await db<GraphRow[]>`
    select g.*, cs.root_id as creator_root from metagit_graphs g left join sessions cs on cs.id = g.created_by
     where g.team_id = ${ctx.principal.teamId} and g.id = ${id}`;
  const p = ctx.principal;
  if (!g || (p.kind === 'session' && (p.graphId !== null || g.creator_root !== p.rootId))) graphNotFound(id);
  return g;
}

/** The nodes of graph `id` of team `teamId`, by position, with their dependencies' node ids. */
async function loadNodes(db: postgres.Sql | postgres.TransactionSql, teamId: string, id: string): Promise<NodeRow[]> {
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

function event(g: GraphRow, type: string, payload: Record<string, unknown>, revision: number): EventInput {
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
async function withTaskGraph<T>(ctx: Ctx, id: string, fn: (tx: postgres.TransactionSql, g: GraphRow, nodes: Map<string, NodeRow>) => Promise<Change<T>>) {
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

// ---------------------------------------------------------------------------------------------
// Intents

export interface IntentInput {
  intentId?: string;
  title: string;
  goal: string;
  acceptance?: string[];
  project?: string;
  repos?: string[];
  objectiveId?: string;
  handoffId?: string;
}

interface IntentRow {
  id: string;
  title: string;
  goal: string;
  acceptance: string[];
  project: string | null;
  repos: string[];
  objective_id: string | null;
  handoff_id: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

const toIntent = (r: IntentRow) => ({
  intentId: r.id,
  title: r.title,
  goal: r.goal,
  acceptance: r.acceptance,
  project: r.project,
  repos: r.repos,
  objectiveId: r.objective_id,
  handoffId: r.handoff_id,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export type IntentView = ReturnType<typeof toIntent>;

function checkIntent(input: IntentInput): { title: string; goal: string } {
  const title = input.title.trim();
  const goal = input.goal.trim();
  if (!title || !goal) fail('validation_failed', 'title and goal must be non-empty');
  return { title, goal };
}

async function insertIntent(ctx: Ctx, db: postgres.Sql | postgres.TransactionSql, id: string, input: IntentInput): Promise<IntentRow> {
  const { title, goal } = checkIntent(input);
  const [row] = await db<IntentRow[]>`
    insert into metagit_intents (id, title, goal, acceptance, project, repos, objective_id, handoff_id, created_by, team_id)
    values (${id}, ${title}, ${goal}, ${JSON.stringify(input.acceptance ?? [])}::text::jsonb, ${input.project ?? null},
            ${JSON.stringify(input.repos ?? [])}::text::jsonb, ${input.objectiveId ?? null}, ${input.handoffId ?? null}, ${ctx.principal.id},
            ${ctx.principal.teamId})
    on conflict (team_id, id) do nothing
    returning *`;
  if (!row) throw new DomainError('intent_exists', `intent "${id}" already exists; use it, or pick another intentId`, { intentId: id });
  // The audit's record: intents have no topic of their own, so no stream serves it.
  const payload = { event: 'intent-created', id, title: row.title };
  await appendEvents(db, ctx.principal.teamId, [{ topic: auditTopic('intents'), event: 'intent-created', subjectId: id, payload }], actorOf(ctx.principal));
  return row;
}

/** `POST /v1/intents`: a TaskIntent (RFC §2.1). Id: `intentId` (slug pattern) or `intent-<random>`. 409 intent_exists. */
export async function createIntent(ctx: Ctx, input: IntentInput): Promise<IntentView> {
  const id = input.intentId ?? `intent-${newId('td').slice(3, 15)}`;
  return toIntent(await withTx(ctx.sql, (tx) => insertIntent(ctx, tx, id, input)));
}

/**
 * SQL: the intents `p` may see (alias `i`), only ever of its own team: users all of
 * them; sessions those created in their subtree.
 */
function intentVisible(db: postgres.Sql, p: Principal) {
  if (p.kind === 'user') return db`i.team_id = ${p.teamId}`;
  if (p.graphId !== null) return db`false`;
  return db`i.team_id = ${p.teamId} and exists (select 1 from sessions cs where cs.id = i.created_by and cs.root_id = ${p.rootId})`;
}

/** `GET /v1/intents/{id}`: users, and sessions of the subtree that created it; anyone else 404. */
export async function getIntent(ctx: Ctx, id: string): Promise<IntentView> {
  const [row] = SLUG_ID.test(id)
    ? await ctx.sql<IntentRow[]>`select i.* from metagit_intents i where i.id = ${id} and ${intentVisible(ctx.sql, ctx.principal)}`
    : [];
  if (!row) fail('intent_not_found', `intent not found: ${id.slice(0, 128)}`);
  return toIntent(row);
}

/** `GET /v1/intents`: the intents the caller may see, by id, keyset-paginated (page ≤ list_limit). */
export async function listIntents(ctx: Ctx, input: { limit?: number; cursor?: string }) {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const after = input.cursor !== undefined ? (decodeCursor(input.cursor, [SLUG_ID])[0] as string) : undefined;
  const rows = await ctx.sql<IntentRow[]>`
    select i.* from metagit_intents i where ${intentVisible(ctx.sql, ctx.principal)}
       and ${after !== undefined ? ctx.sql`i.id collate "C" > ${after}` : ctx.sql`true`} order by i.id collate "C" limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { intents: page.map(toIntent), nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null };
}

// ---------------------------------------------------------------------------------------------
// Graphs

export interface CreateTaskGraphInput extends Omit<IntentInput, 'intentId'> {
  graphId?: string;
}

/**
 * `POST /v1/task-graphs` (RFC `task create`): the graph and its root intent `intent-<graphId>` in
 * one transaction, with `TaskGraphCreated`. Id: `graphId` (slug pattern) or 12 random hex. A taken
 * id is 409 task_graph_exists and writes nothing.
 */
export async function createTaskGraph(ctx: Ctx, input: CreateTaskGraphInput): Promise<TaskGraphView> {
  const id = input.graphId ?? newId('td').slice(3, 15);
  const title = checkIntent(input).title;
  const scope = scopeOf(id);
  return withTx(ctx.sql, async (tx) => {
    await lockXact(tx, graphLock(ctx.principal.teamId, id));
    const [exists] = await tx`select 1 from metagit_graphs where team_id = ${ctx.principal.teamId} and id = ${id}`;
    if (exists) throw new DomainError('task_graph_exists', `task graph "${id}" already exists; use it, or pick another graphId`, { graphId: id });
    const intent = await insertIntent(ctx, tx, `intent-${id}`, input);
    const [g] = await tx<GraphRow[]>`
      insert into metagit_graphs (id, scope, title, root_intent_id, objective_id, handoff_id, created_by, team_id)
      values (${id}, ${scope}, ${title}, ${intent.id}, ${input.objectiveId ?? null}, ${input.handoffId ?? null}, ${ctx.principal.id}, ${ctx.principal.teamId})
      returning *`;
    await appendEvents(tx, g.team_id, [event(g, 'TaskGraphCreated', { title, status: 'active' }, g.revision)], actorOf(ctx.principal));
    return toGraph(g, []);
  });
}

/** `GET /v1/task-graphs/{id}` (RFC `task list --graph-id`, status): the graph with every node's status view. */
export async function getTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  return (await ctx.sql.begin('isolation level repeatable read read only', async (tx) => {
    const g = await loadGraph(ctx, tx, id);
    return toGraph(g, await loadNodes(tx, g.team_id, id));
  })) as TaskGraphView;
}

/** `GET /v1/task-graphs`: the graphs the caller may see (by id), optionally with one `status`; summaries. */
export async function listTaskGraphs(ctx: Ctx, input: { status?: string; limit?: number; cursor?: string }) {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const after = input.cursor !== undefined ? (decodeCursor(input.cursor, [SLUG_ID])[0] as string) : undefined;
  const p = ctx.principal;
  const rows = await ctx.sql<GraphRow[]>`
    select g.* from metagit_graphs g left join sessions cs on cs.id = g.created_by
     where g.team_id = ${p.teamId}
       and ${p.kind === 'user' ? ctx.sql`true` : p.graphId !== null ? ctx.sql`false` : ctx.sql`cs.root_id = ${p.rootId}`}
       and ${input.status ? ctx.sql`g.status = ${input.status}` : ctx.sql`true`}
       and ${after !== undefined ? ctx.sql`g.id collate "C" > ${after}` : ctx.sql`true`}
     order by g.id collate "C" limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return {
    graphs: page.map((g) => ({
      graphId: g.id,
      title: g.title,
      status: g.status,
      rootIntentId: g.root_intent_id,
      objectiveId: g.objective_id,
      updatedAt: g.updated_at.toISOString(),
      revision: g.revision,
    })),
    nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null,
  };
}

/** `GET /v1/task-graphs/{id}/ready` (RFC `task ready`): the ready nodes, by position. Writes nothing. */
export async function readyNodes(ctx: Ctx, id: string) {
  const g = await getTaskGraph(ctx, id);
  return { graphId: g.graphId, nodes: g.nodes.filter((n) => n.status === 'ready') };
}

/** `POST /v1/task-graphs/{id}/cancel`: the graph reads cancelled (its nodes are left as they are). Idempotent. */
export async function cancelTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  const out = await withTaskGraph(ctx, id, async (_tx, g) => {
    g.status = 'cancelled'; // withTaskGraph writes it, with TaskGraphStatusChanged, when it moved
    return { result: null };
  });
  return out.graph;
}

/** `POST /v1/task-graphs/{id}/reopen`: a cancelled graph is active again (completed when every node is). Idempotent. */
export async function reopenTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  const out = await withTaskGraph(ctx, id, async (_tx, g) => {
    if (g.status === 'cancelled') g.status = 'active';
    return { result: null };
  });
  return out.graph;
}

/**
 * `POST /v1/task-graphs/{id}/expand` (RFC `task expand`; docs/seeds/metagit.md §4 with Coord's deterministic rules,
 * metagit.outline.ts): adds the nodes and edges in one transaction — all or nothing — with one
 * `TaskNodeCreated` per node, then `TaskReady` for each that is ready. Errors: 400 validation_failed
 * (outline_empty/invalid, too many nodes), 409 node_id_taken, 422 dependency_not_found /
 * dependency_cycle naming the ids.
 */
export async function expandTaskGraph(ctx: Ctx, id: string, outline: string | unknown[]) {
  const maxTitle = ctx.config.todo.maxTitle;
  return withTaskGraph(ctx, id, async (tx, g, existing) => {
    if (g.status === 'cancelled') fail('invalid_transition', `task graph "${id}" is cancelled`);
    const r = expandOutline(outline, new Set(existing.keys()));
    if (!r.ok) {
      if (r.code === 'node_id_taken') throw new DomainError('node_id_taken', r.message, { ids: r.ids });
      if (r.code === 'dependency_not_found') throw new DomainError('dependency_not_found', r.message, { ids: r.ids });
      if (r.code === 'dependency_cycle') throw new DomainError('dependency_cycle', r.message, { ids: r.ids });
      fail('validation_failed', r.message);
    }
    for (const n of r.nodes) {
      for (const [what, v] of [
        ['title', n.title],
        ['project', n.project ?? undefined],
        ['repository', n.repository ?? undefined],
      ] as const) {
        const why = unstorable(v);
        if (why) fail('validation_failed', `node "${n.nodeId}" ${what} contains ${why}`);
      }
      if (bytes(n.title) > maxTitle)
        fail('title_too_long', `node "${n.nodeId}" title is ${bytes(n.title)} bytes; the limit is ${maxTitle} bytes`, { limit: maxTitle });
    }
    const count = r.nodes.length;
    const [{ last_position }] = await tx<{ last_position: number }[]>`
      insert into scopes (scope, last_position, team_id) values (${g.scope}, ${count}, ${g.team_id})
      on conflict (team_id, scope) do update set last_position = scopes.last_position + ${count}
      returning last_position`;
    const first = last_position - count + 1;
    const todoIds = new Map<string, string>([...existing.values()].map((e) => [e.node_id, e.todo_id]));
    for (const n of r.nodes) todoIds.set(n.nodeId, newId('td'));
    const doneDeps = new Set([...existing.values()].filter((e) => e.status === 'done').map((e) => e.node_id));
    await insertItems(
      tx,
      { teamId: g.team_id, scope: g.scope, createdBy: ctx.principal.id },
      r.nodes.map((n, i) => ({
        id: todoIds.get(n.nodeId)!,
        title: n.title,
        position: first + i,
        unfinishedDeps: n.dependsOn.filter((d) => !doneDeps.has(d)).length,
      })),
    );
    const edges = r.nodes.flatMap((n) => n.dependsOn.map((d) => [todoIds.get(n.nodeId)!, todoIds.get(d)!] as const));
    await insertEdges(tx, edges);
    await tx`
      insert into metagit_nodes (team_id, graph_id, node_id, todo_id, intent_id, project, repository)
      select ${g.team_id}, ${id}, * from unnest(${r.nodes.map((n) => n.nodeId)}::text[], ${r.nodes.map((n) => todoIds.get(n.nodeId)!)}::text[],
                                  ${r.nodes.map(() => g.root_intent_id)}::text[], ${r.nodes.map((n) => n.project)}::text[],
                                  ${r.nodes.map((n) => n.repository)}::text[])`;
    return {
      result: { added: r.nodes.map((n) => n.nodeId) },
      events: r.nodes.map((n) => ({ type: 'TaskNodeCreated', payload: { nodeId: n.nodeId, title: n.title, status: 'pending' } })),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Node transitions

function nodeOf(nodes: Map<string, NodeRow>, graphId: string, nodeId: string): NodeRow {
  const n = nodes.get(nodeId);
  if (!n) fail('task_node_not_found', `task node not found: ${graphId}/${nodeId.slice(0, 128)}`);
  return n;
}

function refuseStatus(graphId: string, n: NodeRow, act: string): never {
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
function requireActive(g: GraphRow): void {
  if (g.status === 'cancelled') fail('invalid_transition', `task graph "${g.id}" is cancelled: reopen it (POST /v1/task-graphs/${g.id}/reopen) first`);
}

/** Wakes this replica's and other replicas' readers of the graph's topic after commit (engine writes). */
function touched(tx: postgres.TransactionSql, g: GraphRow): void {
  noteTopics(tx, [streamKey(g.team_id, topicOf(g.scope))]);
}

/**
 * `POST …/nodes/{nodeId}/start` (RFC `task start`, "start without a scheduler"): the engine's claim
 * of a ready node, owned by the calling session — two agents never start one node. Errors: 403
 * claim_requires_session (users do not claim), 409 dependency_blocked (pending), already_claimed
 * (running), invalid_transition (blocked, completed, cancelled).
 */
export async function startNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  if (p.kind !== 'session') fail('claim_requires_session', 'starting a node is a claim: it needs a session identity');
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'running') throw new DomainError('already_claimed', `node ${id}/${nodeId} is already running (owner ${n.owner})`, { owner: n.owner });
    if (status !== 'ready') refuseStatus(id, n, 'start');
    const claimed = await guardedClaim(tx, {
      id: n.todo_id,
      actor: p.id,
      by: actorOf(p),
      override: false,
      emit: emitsFor(g.scope, ctx.config.todo.emitEvents),
      leaseMs: ctx.config.todo.claimLeaseMs,
    });
    if (!claimed) throw new DomainError('already_claimed', `node ${id}/${nodeId} could not be claimed`, {});
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskStarted', payload: { nodeId, status: 'running', owner: p.id } }] };
  });
}

/**
 * `POST …/nodes/{nodeId}/complete` (RFC `task complete`): running (by its owner or a user) or
 * blocked → completed through the engine's done (the cascade readies dependents; `TaskReady` once
 * each). A ready node completes in one step (claimed and done in the same transaction). Errors: 409
 * dependency_blocked (pending), invalid_transition (completed or cancelled: reopen first), 403
 * forbidden (someone else's running node).
 */
export async function completeNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'running' && n.owner !== p.id && p.kind !== 'user')
      fail('forbidden', `node ${id}/${nodeId} is running for ${n.owner}; only its owner or an operator completes it`);
    if (status === 'blocked' && n.unfinished_deps > 0) {
      // Blocking never skips the DAG: a blocked node completes only once its dependencies have.
      throw new DomainError('dependency_blocked', `node ${id}/${nodeId} waits on unfinished dependencies: ${n.depends_on.join(', ')}`, {
        dependsOn: n.depends_on,
      });
    }
    if (status === 'ready') {
      // Started and completed in one step; `next` may have started it meanwhile (it takes no graph lock).
      if (!(await startItem(tx, n.todo_id, p.id))) throw new DomainError('already_claimed', `node ${id}/${nodeId} was just started by another session`, {});
    } else if (status !== 'running' && status !== 'blocked') {
      refuseStatus(id, n, 'complete');
    }
    await completeContractRow(tx, n.todo_id, p.id, actorOf(p), ctx.config.todo.emitEvents);
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskCompleted', payload: { nodeId, status: 'completed' } }] };
  });
}

/** `POST …/nodes/{nodeId}/block` (RFC `task block --reason`): ready, pending or running → blocked with the reason. */
export async function blockNode(ctx: Ctx, id: string, nodeId: string, reason: string) {
  const p = ctx.principal;
  const text = reason.trim();
  if (!text) fail('validation_failed', 'reason is required');
  if (bytes(text) > ctx.config.todo.maxNote)
    fail('note_too_long', `reason is ${bytes(text)} bytes; the limit is ${ctx.config.todo.maxNote} bytes`, { limit: ctx.config.todo.maxNote });
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'completed' || status === 'cancelled') refuseStatus(id, n, 'block');
    if (status === 'running' && n.owner !== p.id && p.kind !== 'user')
      fail('forbidden', `node ${id}/${nodeId} is running for ${n.owner}; only its owner or an operator blocks it`);
    if (status === 'blocked' && n.note === text) return { result: { nodeId } };
    await blockItems(tx, [n.todo_id], { ownerIfNone: p.id, note: text });
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskBlocked', payload: { nodeId, status: 'blocked', reason: text } }] };
  });
}

/** `POST …/nodes/{nodeId}/cancel` (RFC `cancel`): any non-terminal node → cancelled; its dependents stay pending and name it. */
export async function cancelNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'cancelled') return { result: { nodeId } };
    if (status === 'completed') refuseStatus(id, n, 'cancel');
    if ((status === 'running' || status === 'blocked') && n.owner !== p.id && p.kind !== 'user') {
      fail('forbidden', `node ${id}/${nodeId} is ${status} for ${n.owner}; only its owner or an operator cancels it`);
    }
    await tx`update metagit_nodes set cancelled_at = now() where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    await blockItems(tx, [n.todo_id], { ownerIfNone: p.id, note: 'cancelled' });
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskCancelled', payload: { nodeId, status: 'cancelled' } }] };
  });
}

/**
 * `POST …/nodes/{nodeId}/reopen` (Coord's explicit way out of a terminal or blocked state; docs/seeds/metagit.md §9):
 * blocked, cancelled or completed → pending/ready again. Reopening a completed node re-blocks its
 * unclaimed ready dependents (the engine's cascade).
 */
export async function reopenNode(ctx: Ctx, id: string, nodeId: string) {
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'ready' || status === 'pending' || status === 'running') {
      throw new DomainError('invalid_transition', `node ${id}/${nodeId} is ${status}: only a blocked, cancelled or completed node is reopened`, {
        nodeStatus: status,
      });
    }
    await tx`update metagit_nodes set cancelled_at = null where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    await reopenItems(tx, [n.todo_id], { includeDone: true, clearNote: true });
    if (n.status === 'done') await cascade(tx, n.todo_id, 1);
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskReopened', payload: { nodeId, status: n.unfinished_deps > 0 ? 'pending' : 'ready', from: status } }] };
  });
}

/** POSIX shell quoting: plain words as they are, anything else in single quotes. */
function q(value: string): string {
  return /^[\w./:@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

export interface AclInput {
  agentId: string;
  branch?: string;
  leaseId?: string;
  worktreeId?: string;
  claimIds?: string[];
  pattern?: string;
}

/**
 * `PUT …/nodes/{nodeId}/acl` (RFC `task bind-acl`, docs/seeds/metagit.md §5): stores the binding and the suggested
 * commands, and sets the node's agent. Hints only: no git, no lease, no worktree, no other side
 * effect. Writes `TaskAclBound`.
 */
export async function bindAcl(ctx: Ctx, id: string, nodeId: string, input: AclInput) {
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const repo = n.repository?.includes('/') ? n.repository : n.project && n.repository ? `${n.project}/${n.repository}` : (n.repository ?? 'PROJECT/REPO');
    const branch = input.branch ?? `agent/${nodeId}-${slug(n.title)}`;
    const pattern = input.pattern ?? '**/*';
    const acl = {
      branch,
      leaseId: input.leaseId ?? null,
      worktreeId: input.worktreeId ?? null,
      claimIds: input.claimIds ?? [],
      // Every value is shell-quoted: the commands are suggestions a person or agent may paste.
      commands: [
        `metagit branch allocate --repo ${q(repo)} --agent ${q(input.agentId)} --node ${q(nodeId)}`,
        `metagit branch lease acquire --repo ${q(repo)} --branch ${q(branch)} --agent ${q(input.agentId)} --allocate`,
        `metagit worktree create --repo ${q(repo)} --branch ${q(branch)}`,
        `metagit claim declare --repo ${q(repo)} --agent ${q(input.agentId)} --pattern ${q(pattern)}`,
      ],
    };
    await tx`update metagit_nodes set acl = ${JSON.stringify(acl)}::text::jsonb, agent_id = ${input.agentId}
              where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    return { result: { nodeId }, events: [{ type: 'TaskAclBound', payload: { nodeId, agentId: input.agentId, status: nodeStatus(n) } }] };
  });
}

/** `GET …/nodes/{nodeId}` (RFC `task status --node-id`). */
export async function getNode(ctx: Ctx, id: string, nodeId: string): Promise<TaskNodeView> {
  const g = await getTaskGraph(ctx, id);
  const n = g.nodes.find((x) => x.nodeId === nodeId);
  if (!n) fail('task_node_not_found', `task node not found: ${id}/${nodeId.slice(0, 128)}`);
  return n;
}

/**
 * `next` in scope `metagit:<id>`: starts the first ready node by position for the calling session.
 * The engine's own `next` shape — the lowest ready row `FOR UPDATE SKIP LOCKED`, then the guarded
 * claim — so racing agents each get a different node without waiting on the graph's lock (a start
 * changes no other node's readiness); `TaskStarted` is written in the same transaction.
 */
export async function nextNode(ctx: Ctx, id: string): Promise<{ nodeId: string | null; todoId: string | null }> {
  const p = ctx.principal;
  if (p.kind !== 'session') fail('claim_requires_session', 'starting a node is a claim: it needs a session identity');
  if (!SLUG_ID.test(id)) graphNotFound(id);
  return withTx(ctx.sql, async (tx) => {
    const g = await loadGraph(ctx, tx, id);
    if (g.status === 'cancelled') return { nodeId: null, todoId: null };
    for (;;) {
      const [pick] = await tx<{ todo_id: string; node_id: string }[]>`
        select t.id as todo_id, n.node_id from todos t join metagit_nodes n on n.team_id = t.team_id and n.todo_id = t.id
         where t.team_id = ${g.team_id} and t.scope = ${g.scope} and t.status = 'todo' and t.owner is null and t.unfinished_deps = 0
         order by t.position, t.id limit 1 for update of t skip locked`;
      if (!pick) return { nodeId: null, todoId: null };
      const claimed = await guardedClaim(tx, {
        id: pick.todo_id,
        actor: p.id,
        by: actorOf(p),
        override: false,
        emit: emitsFor(g.scope, ctx.config.todo.emitEvents),
        leaseMs: ctx.config.todo.claimLeaseMs,
      });
      if (!claimed) continue;
      touched(tx, g);
      const [u] = await tx<GraphRow[]>`
        update metagit_graphs set updated_at = now(), revision = revision + 1 where team_id = ${g.team_id} and id = ${id} returning *`;
      await appendEvents(tx, u.team_id, [event(u, 'TaskStarted', { nodeId: pick.node_id, status: 'running', owner: p.id }, u.revision)], actorOf(p));
      return { nodeId: pick.node_id, todoId: pick.todo_id };
    }
  });
}
