import { fail } from '../http/errors.js';

export type NodeStatus = 'pending' | 'ready' | 'blocked' | 'running' | 'completed' | 'cancelled';

export interface GraphRow {
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

export interface NodeRow {
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

export function toGraph(g: GraphRow, rows: NodeRow[]) {
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
export function toSummary(g: GraphRow, rows: NodeRow[]) {
  const { nodes: _nodes, ...rest } = toGraph(g, rows);
  return { ...rest, readyNow: rows.filter((r) => nodeStatus(r) === 'ready').map((r) => r.node_id) };
}

export type TaskGraphSummaryView = ReturnType<typeof toSummary>;

export function graphNotFound(id: string): never {
  fail('task_graph_not_found', `task graph not found: ${id.slice(0, 128)}`);
}
