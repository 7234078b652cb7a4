/**
 * `client.metagit` and `client.intents`: metagit RFC-0008 (seed 001) over `/v1/task-graphs` and
 * `/v1/intents`: intents, task graphs, deterministic expand, ready, node transitions and the ACL
 * binding. Node statuses are `pending | ready | blocked | running | completed | cancelled`.
 * Refusals: `NotFound` (task_graph_not_found, task_node_not_found, intent_not_found), `Conflict`
 * (task_graph_exists, node_id_taken, already_claimed, dependency_blocked, invalid_transition),
 * `InvalidRequest` (dependency_not_found, dependency_cycle with `ids`).
 */
import type { components, paths } from './generated/openapi.js';
import type { Transport } from './transport.js';

type Schemas = components['schemas'];
export type MetagitIntent = Schemas['MetagitIntent'];
export type MetagitGraph = Schemas['MetagitGraph'];
export type MetagitNode = Schemas['MetagitNode'];
/** A node write's answer: the node, and the graph's status, counts and ready set (not every node). */
export type MetagitNodeResult = Schemas['MetagitNodeResult'];
export type MetagitGraphSummaryAfterWrite = Schemas['MetagitGraphSummaryAfterWrite'];
export type CreateMetagitGraphInput = Schemas['CreateMetagitGraph'];
export type CreateMetagitIntentInput = Schemas['CreateMetagitIntent'];
export type MetagitExpandInput = Schemas['ExpandMetagitGraph'];
export type MetagitGraphList = paths['/v1/task-graphs']['get']['responses'][200]['content']['application/json'];
export type MetagitIntentList = paths['/v1/intents']['get']['responses'][200]['content']['application/json'];
export type MetagitAclInput = NonNullable<paths['/v1/task-graphs/{id}/nodes/{nodeId}/acl']['put']['requestBody']>['content']['application/json'];

export class MetagitApi {
  constructor(private readonly t: Transport) {}

  /** Creates a graph and its root intent (`POST /v1/task-graphs`, metagit `task create`). */
  async create(input: CreateMetagitGraphInput): Promise<MetagitGraph> {
    return (await this.t.unwrap('POST /v1/task-graphs', this.t.api.POST('/v1/task-graphs', { body: input }))).graph;
  }

  /** One page of graph summaries by id (`GET /v1/task-graphs`), optionally one `status`. */
  async list(query: { status?: 'active' | 'completed' | 'cancelled'; limit?: number; cursor?: string } = {}): Promise<MetagitGraphList> {
    return this.t.unwrap('GET /v1/task-graphs', this.t.api.GET('/v1/task-graphs', { params: { query } }));
  }

  /** A graph with every node's status (`GET /v1/task-graphs/{id}`). */
  async get(id: string): Promise<MetagitGraph> {
    return (await this.t.unwrap('GET /v1/task-graphs/{id}', this.t.api.GET('/v1/task-graphs/{id}', { params: { path: { id } } }))).graph;
  }

  /** Adds nodes from an indented outline or a list of items, deterministically and all-or-nothing (`…/expand`). */
  async expand(id: string, outline: MetagitExpandInput['outline']): Promise<{ added: MetagitNode[]; graph: MetagitGraphSummaryAfterWrite }> {
    return this.t.unwrap('POST /v1/task-graphs/{id}/expand', this.t.api.POST('/v1/task-graphs/{id}/expand', { params: { path: { id } }, body: { outline } }));
  }

  /** The ready nodes (`…/ready`, metagit `task ready`). */
  async ready(id: string): Promise<MetagitNode[]> {
    return (await this.t.unwrap('GET /v1/task-graphs/{id}/ready', this.t.api.GET('/v1/task-graphs/{id}/ready', { params: { path: { id } } }))).nodes;
  }

  /** One node (`…/nodes/{nodeId}`, metagit `task status`). */
  async node(id: string, nodeId: string): Promise<MetagitNode> {
    return (
      await this.t.unwrap(
        'GET /v1/task-graphs/{id}/nodes/{nodeId}',
        this.t.api.GET('/v1/task-graphs/{id}/nodes/{nodeId}', { params: { path: { id, nodeId } } }),
      )
    ).node;
  }

  private async transition(verb: 'start' | 'complete' | 'cancel' | 'reopen', id: string, nodeId: string): Promise<MetagitNodeResult> {
    const path = `/v1/task-graphs/{id}/nodes/{nodeId}/${verb}` as '/v1/task-graphs/{id}/nodes/{nodeId}/start';
    return this.t.unwrap(`POST ${path}`, this.t.api.POST(path, { params: { path: { id, nodeId } }, body: {} }));
  }

  /** Starts a ready node: a claim owned by this session (one winner). */
  start(id: string, nodeId: string): Promise<MetagitNodeResult> {
    return this.transition('start', id, nodeId);
  }

  /** Completes a node (ready, running or blocked); dependents become ready. */
  complete(id: string, nodeId: string): Promise<MetagitNodeResult> {
    return this.transition('complete', id, nodeId);
  }

  /** Cancels a node; its dependents stay pending and name it. */
  cancel(id: string, nodeId: string): Promise<MetagitNodeResult> {
    return this.transition('cancel', id, nodeId);
  }

  /** Reopens a blocked, cancelled or completed node. */
  reopen(id: string, nodeId: string): Promise<MetagitNodeResult> {
    return this.transition('reopen', id, nodeId);
  }

  /** Blocks a node with a reason. */
  async block(id: string, nodeId: string, reason: string): Promise<MetagitNodeResult> {
    return this.t.unwrap(
      'POST /v1/task-graphs/{id}/nodes/{nodeId}/block',
      this.t.api.POST('/v1/task-graphs/{id}/nodes/{nodeId}/block', { params: { path: { id, nodeId } }, body: { reason } }),
    );
  }

  /** Stores an ACL binding and its suggested commands (hints only; no side effect). */
  async bindAcl(id: string, nodeId: string, input: MetagitAclInput): Promise<MetagitNodeResult> {
    return this.t.unwrap(
      'PUT /v1/task-graphs/{id}/nodes/{nodeId}/acl',
      this.t.api.PUT('/v1/task-graphs/{id}/nodes/{nodeId}/acl', { params: { path: { id, nodeId } }, body: input }),
    );
  }

  /** Reopens a cancelled graph. */
  async reopenGraph(id: string): Promise<MetagitGraph> {
    return (await this.t.unwrap('POST /v1/task-graphs/{id}/reopen', this.t.api.POST('/v1/task-graphs/{id}/reopen', { params: { path: { id } } }))).graph;
  }

  /** Cancels the whole graph. */
  async cancelGraph(id: string): Promise<MetagitGraph> {
    return (await this.t.unwrap('POST /v1/task-graphs/{id}/cancel', this.t.api.POST('/v1/task-graphs/{id}/cancel', { params: { path: { id } } }))).graph;
  }
}

export class IntentsApi {
  constructor(private readonly t: Transport) {}

  /** Creates a MetagitIntent (`POST /v1/intents`). */
  async create(input: CreateMetagitIntentInput): Promise<MetagitIntent> {
    return (await this.t.unwrap('POST /v1/intents', this.t.api.POST('/v1/intents', { body: input }))).intent;
  }

  /** One page of intents in id order (`GET /v1/intents`); pass `nextCursor` back as `cursor` (null on the last page). Errors: `InvalidRequest` (invalid_cursor). */
  async list(query: { limit?: number; cursor?: string } = {}): Promise<MetagitIntentList> {
    return this.t.unwrap('GET /v1/intents', this.t.api.GET('/v1/intents', { params: { query } }));
  }

  /** Reads one intent. */
  async get(id: string): Promise<MetagitIntent> {
    return (await this.t.unwrap('GET /v1/intents/{id}', this.t.api.GET('/v1/intents/{id}', { params: { path: { id } } }))).intent;
  }
}
