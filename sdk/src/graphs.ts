/**
 * `client.graphs` and `client.agents`: Task Graph v1 (seed 002) over `/v1/graphs` and the
 * configured-Agent registry over `/v1/agents`. Task Graph JSON keeps the contract's names.
 * Refusals carry the contract's error members: `TaskGraphInvalid` (400, with `stage`, `details`,
 * `taskId`), `TaskStateConflict` (409, e.g. a graph id that exists, or contradictory persisted
 * facts at stage `graph-scheduling`).
 */
import type { components, paths } from './generated/openapi.js';
import type { Transport } from './transport.js';

type Schemas = components['schemas'];
/** The body of `graphs.validate` / `graphs.create`: `{graph, intentMap?}` or a bare Task Graph v1 document. */
export type GraphRequest = paths['/v1/graphs']['post']['requestBody']['content']['application/json'];
/** A Task Graph v1 document (seed 002 "Input"). */
export type TaskGraphV1 = Schemas['TaskGraphV1Input'];
/** A durable graph: parent facts, subtasks with derived states, frontier, intent coverage, revision. */
export type TaskGraphRecord = Schemas['TaskGraphRecord'];
/** Validation succeeded (`sideEffects: false`): the normalised facts and intent coverage. */
export type TaskGraphValidation = Schemas['TaskGraphValidation'];
/** `{ok, validation: {sideEffects: true}, graph}` after a create. */
export type TaskGraphCreated = Schemas['TaskGraphCreated'];
/** Status plus the newest lifecycle events. */
export type TaskGraphInspect = Schemas['TaskGraphInspect'];
/** Read-only Graph Preflight: the READY wave and a decision per subtask. */
export type TaskGraphPlan = Schemas['TaskGraphPlan'];
/** One line of `graphs.list`. */
export type TaskGraphSummary = Schemas['TaskGraphSummary'];
/** One page of graph summaries. */
export type TaskGraphList = Schemas['TaskGraphList'];
/** A configured Agent. */
export type Agent = Schemas['Agent'];
/** One page of Agents. */
export type AgentList = Schemas['AgentList'];
/** The body of `agents.register`: id, adapter?, command?. */
export type RegisterAgentInput = Schemas['RegisterAgent'];

export class GraphsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Validates a Task Graph (and its optional Intent Map) without writing (`POST /v1/graphs/validate`):
   * the contract's checks in their fixed order against the configured Agents. `input` is
   * `{graph, intentMap?}` or a bare Task Graph v1 document. Errors: `TaskGraphInvalid` (`stage`
   * `graph-validation` / `intent-map-validation`), `InvalidRequest` (payload_too_large).
   */
  async validate(input: GraphRequest): Promise<TaskGraphValidation> {
    return this.t.unwrap('POST /v1/graphs/validate', this.t.api.POST('/v1/graphs/validate', { body: input }));
  }

  /**
   * Creates a graph (`POST /v1/graphs`; seed 002 "Durable graph create"): validates like
   * `validate`, then writes the graph, one work item per subtask in scope `graph:<id>` and the
   * dependency edges in one transaction. Errors: `TaskGraphInvalid`, `TaskStateConflict` (the id exists).
   */
  async create(input: GraphRequest): Promise<TaskGraphCreated> {
    return this.t.unwrap('POST /v1/graphs', this.t.api.POST('/v1/graphs', { body: input }));
  }

  /** One page of graph summaries, newest update first (`GET /v1/graphs`). */
  async list(query: { limit?: number; cursor?: string } = {}): Promise<TaskGraphList> {
    return this.t.unwrap('GET /v1/graphs', this.t.api.GET('/v1/graphs', { params: { query } }));
  }

  /** Every graph summary the caller may see, following `nextCursor`. */
  async listAll(query: { limit?: number } = {}): Promise<TaskGraphSummary[]> {
    const out: TaskGraphSummary[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.list({ ...query, cursor });
      out.push(...page.graphs);
      if (!page.nextCursor) return out;
      cursor = page.nextCursor;
    }
  }

  /**
   * A graph's status (`GET /v1/graphs/{id}`): subtasks with derived states, the frontier, the
   * parent state and intent coverage, from one snapshot. Errors: `NotFound` (graph_not_found),
   * `TaskStateConflict` (contradictory persisted facts; never repaired).
   */
  async get(id: string): Promise<TaskGraphRecord> {
    const r = await this.t.unwrap('GET /v1/graphs/{id}', this.t.api.GET('/v1/graphs/{id}', { params: { path: { id } } }));
    return r.graph;
  }

  /** Status plus the newest lifecycle events, at most 100 (`GET /v1/graphs/{id}/inspect`). */
  async inspect(id: string): Promise<TaskGraphInspect> {
    return this.t.unwrap('GET /v1/graphs/{id}/inspect', this.t.api.GET('/v1/graphs/{id}/inspect', { params: { path: { id } } }));
  }

  /**
   * Graph Preflight (`GET /v1/graphs/{id}/plan`; seed 002 "Read-only Graph Preflight"): the
   * deterministic, conflict-aware READY wave and a decision with a reason for every subtask.
   * Writes nothing. Errors: `NotFound`, `Conflict` (INVALID_AGENT_CONFIG, TASK_STATE_CONFLICT).
   */
  async plan(id: string): Promise<TaskGraphPlan> {
    const r = await this.t.unwrap('GET /v1/graphs/{id}/plan', this.t.api.GET('/v1/graphs/{id}/plan', { params: { path: { id } } }));
    return r.plan as unknown as TaskGraphPlan;
  }
}

export class AgentsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Registers a configured Agent (`POST /v1/agents`; users only): the identity graphs name as
   * planner, reviewer or implementer, with optional adapter and command facts.
   * Errors: `Forbidden`, `Conflict` (agent_exists), `ValidationFailed` (the id format).
   */
  async register(input: RegisterAgentInput): Promise<Agent> {
    const r = await this.t.unwrap('POST /v1/agents', this.t.api.POST('/v1/agents', { body: input }));
    return r.agent;
  }

  /** One page of Agents in id byte order (`GET /v1/agents`). */
  async list(query: { limit?: number; cursor?: string } = {}): Promise<AgentList> {
    return this.t.unwrap('GET /v1/agents', this.t.api.GET('/v1/agents', { params: { query } }));
  }

  /** Every configured Agent, following `nextCursor`. */
  async listAll(): Promise<Agent[]> {
    const out: Agent[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.list({ cursor });
      out.push(...page.agents);
      if (!page.nextCursor) return out;
      cursor = page.nextCursor;
    }
  }
}
