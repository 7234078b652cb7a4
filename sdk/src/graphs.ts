/**
 * `client.graphs` and `client.agents`: Task Graph v1 (seed 002) over `/v1/graphs` and the
 * configured-Agent registry over `/v1/agents`. Task Graph JSON keeps the contract's names.
 * Refusals carry the contract's error members: `TaskGraphInvalid` (400, with `stage`, `details`,
 * `taskId`), `TaskStateConflict` (409, e.g. a graph id that exists, or contradictory persisted
 * facts at stage `graph-scheduling`).
 */
import type { components, paths } from './generated/openapi.js';
import { collectPages, type Transport } from './transport.js';

type Schemas = components['schemas'];
/** The body of `graphs.validate` / `graphs.create`: `{graph, intentMap?}` or a bare Task Graph v1 document. */
export type GraphRequest = paths['/v1/graphs']['post']['requestBody']['content']['application/json'];
/** A Task Graph v1 document (seed 002 "Input"). */
export type TaskGraphV1 = Schemas['TaskGraphV1'];
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

/** The body of `graphs.run` / `graphs.claim`: `baseCommit` (required until the graph has a base), `sessionWaitMs`. */
export type RunInput = Schemas['TaskGraphRunRequest'];
/** What the runner needs to execute one dispatched subtask (session token shown once, worktree, base). */
export type TaskGraphDispatch = Schemas['TaskGraphDispatch'];
/** The result of `graphs.run`: the plan it executed and one dispatch per selected subtask. */
export type TaskGraphRunResult = Schemas['TaskGraphRunResult'];
/** The result of `graphs.claim`: one dispatch. */
export type TaskGraphClaimResult = Schemas['TaskGraphClaimResult'];
/** IMPLEMENTATION_DONE evidence: base, commit, committed and dirty changes. */
export type CompletionEvidence = Schemas['TaskGraphCompletionEvidence'];
/** One reported change: `{status, path, oldPath?}`. */
export type ReportedChange = Schemas['TaskGraphReportedChange'];
/** A runtime failure: `{code, message, exitCode?, …}`. */
export type FailureReport = Schemas['TaskGraphFailureReport'];
export type TaskGraphCompleteResult = Schemas['TaskGraphCompleteResult'];
export type TaskGraphFailResult = Schemas['TaskGraphFailResult'];
export type TaskGraphHeartbeatResult = Schemas['TaskGraphHeartbeatResult'];
/** The shared result of recover, resume, stop and cleanup. */
export type TaskGraphRecoveryResult = Schemas['TaskGraphRecoveryResult'];
export type RecoverInput = NonNullable<Schemas['TaskGraphRecoverRequest']>;
export type StopInput = Schemas['TaskGraphStopRequest'];
export type CleanupReport = Schemas['TaskGraphCleanupReport'];
/** The runner's integration result: ordered sources, applied commits, aggregate commit or conflict. */
export type IntegrationReport = Schemas['TaskGraphIntegrationReport'];
export type TaskGraphIntegrationResult = Schemas['TaskGraphIntegrationResult'];
export type ReviewInput = Schemas['TaskGraphReviewRequest'];
export type TaskGraphReviewResult = Schemas['TaskGraphReviewResult'];

/**
 * The execution half of `client.graphs`: the coordinator's half of Task Graph v1 execution (seed 002;
 * docs/seeds/task-graph-v1.md §7–§11). The coordinator claims and records; the runner on the agent's machine
 * creates the worktrees, launches the implementers and reports back through these calls. Every
 * refusal is a `TaskStateConflict` (409, with `stage`, `details`), `NotFound` (graph_not_found,
 * TASK_NOT_FOUND), `Forbidden`, or for `complete` an `InvalidRequest` (422 AGENT_RUNTIME_ERROR);
 * nothing changes when a call is refused.
 */
export class GraphExecutionApi {
  constructor(protected readonly t: Transport) {}

  /** Claims the next planned wave (`POST /v1/graphs/{id}/run`): one dispatch per selected subtask; `selected: []` when nothing is READY. */
  async run(id: string, input: RunInput = {}): Promise<TaskGraphRunResult> {
    const r = await this.t.unwrap('POST /v1/graphs/{id}/run', this.t.api.POST('/v1/graphs/{id}/run', { params: { path: { id } }, body: input }));
    return r as unknown as TaskGraphRunResult; // the plan's tuple types, as in `plan`
  }

  /** Claims one subtask (`POST /v1/graphs/{id}/subtasks/{sid}/claim`): the fleet claim, same locked checks as run. */
  async claim(id: string, subtaskId: string, input: RunInput = {}): Promise<TaskGraphClaimResult> {
    return this.t.unwrap(
      'POST /v1/graphs/{id}/subtasks/{sid}/claim',
      this.t.api.POST('/v1/graphs/{id}/subtasks/{sid}/claim', { params: { path: { id, sid: subtaskId } }, body: input }),
    );
  }

  /** Extends a dispatch's lease (`…/heartbeat`); `attempt` guards against a stale dispatch. */
  async heartbeat(id: string, subtaskId: string, attempt?: number): Promise<TaskGraphHeartbeatResult> {
    return this.t.unwrap(
      'POST /v1/graphs/{id}/subtasks/{sid}/heartbeat',
      this.t.api.POST('/v1/graphs/{id}/subtasks/{sid}/heartbeat', { params: { path: { id, sid: subtaskId } }, body: attempt === undefined ? {} : { attempt } }),
    );
  }

  /** Reports IMPLEMENTATION_DONE evidence (`…/complete`): SUCCEEDED, or FAILED INTENT_SCOPE_DRIFT under a strict map (`ok: false`). */
  async complete(id: string, subtaskId: string, evidence: CompletionEvidence): Promise<TaskGraphCompleteResult> {
    return this.t.unwrap(
      'POST /v1/graphs/{id}/subtasks/{sid}/complete',
      this.t.api.POST('/v1/graphs/{id}/subtasks/{sid}/complete', { params: { path: { id, sid: subtaskId } }, body: evidence }),
    );
  }

  /** Reports a failed dispatch (`…/fail`), e.g. `{code: 'AGENT_EXIT_NONZERO', message, exitCode}`. */
  async fail(id: string, subtaskId: string, report: FailureReport): Promise<TaskGraphFailResult> {
    return this.t.unwrap(
      'POST /v1/graphs/{id}/subtasks/{sid}/fail',
      this.t.api.POST('/v1/graphs/{id}/subtasks/{sid}/fail', { params: { path: { id, sid: subtaskId } }, body: report }),
    );
  }

  /** Records stranded dispatches as FAILED `interrupted` (`POST /v1/graphs/{id}/recover`), with the runner's observations. */
  async recover(id: string, input: RecoverInput = {}): Promise<TaskGraphRecoveryResult> {
    return this.t.unwrap('POST /v1/graphs/{id}/recover', this.t.api.POST('/v1/graphs/{id}/recover', { params: { path: { id } }, body: input }));
  }

  /** Clears a FAILED or STOPPED subtask's recovery gate (`POST /v1/graphs/{id}/resume`); dispatch stays explicit. */
  async resume(id: string, subtaskId: string): Promise<TaskGraphRecoveryResult> {
    return this.t.unwrap('POST /v1/graphs/{id}/resume', this.t.api.POST('/v1/graphs/{id}/resume', { params: { path: { id } }, body: { subtaskId } }));
  }

  /** Stops the graph or one subtask (`POST /v1/graphs/{id}/stop`); stopped dispatches' sessions stop too. */
  async stop(id: string, input: StopInput): Promise<TaskGraphRecoveryResult> {
    return this.t.unwrap('POST /v1/graphs/{id}/stop', this.t.api.POST('/v1/graphs/{id}/stop', { params: { path: { id } }, body: input }));
  }

  /** Records the runner's cleanup outcomes (`POST /v1/graphs/{id}/cleanup`). */
  async cleanup(id: string, report: CleanupReport): Promise<TaskGraphRecoveryResult> {
    return this.t.unwrap('POST /v1/graphs/{id}/cleanup', this.t.api.POST('/v1/graphs/{id}/cleanup', { params: { path: { id } }, body: report }));
  }

  /** Records the integration result (`PUT /v1/graphs/{id}/integration`); checked against the verified commits. */
  async recordIntegration(id: string, report: IntegrationReport): Promise<TaskGraphIntegrationResult> {
    return this.t.unwrap('PUT /v1/graphs/{id}/integration', this.t.api.PUT('/v1/graphs/{id}/integration', { params: { path: { id } }, body: report }));
  }

  /** Records the aggregate review (`POST /v1/graphs/{id}/review`); approval authorises nothing else. */
  async review(id: string, input: ReviewInput): Promise<TaskGraphReviewResult> {
    return this.t.unwrap('POST /v1/graphs/{id}/review', this.t.api.POST('/v1/graphs/{id}/review', { params: { path: { id } }, body: input }));
  }
}

/** `client.graphs`: validate, create, read and plan Task Graphs, and the execution calls above. */
export class GraphsApi extends GraphExecutionApi {
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
    return collectPages(async (cursor) => {
      const page = await this.list({ ...query, cursor });
      return { rows: page.graphs, nextCursor: page.nextCursor };
    });
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
    return collectPages(async (cursor) => {
      const page = await this.list({ cursor });
      return { rows: page.agents, nextCursor: page.nextCursor };
    });
  }
}
