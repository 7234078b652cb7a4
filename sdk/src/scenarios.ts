/**
 * `client.scenarios`: shared lists for a named group of sessions (seed 000 "In scenarios") over
 * `/v1/scenarios`. A scenario's items live in scope `scenario:<id>` (the todo methods take
 * `scope: 'scenario:<name>'` too); its events on topic `todo:scenario:<id>`.
 */
import { collectPages, type Transport } from './transport.js';
import type {
  CreateScenarioInput,
  CreatedScenario,
  ListScenariosQuery,
  PublishedResult,
  Scenario,
  ScenarioList,
  ScenarioStatus,
  ScenarioSummary,
} from './types.js';

export class ScenariosApi {
  constructor(private readonly t: Transport) {}

  /**
   * Starts a scenario (`POST /v1/scenarios`): a session per member without `session`, one
   * assigned seed item per member with a `task`, and member-name dependencies as edges, in one
   * transaction. Returns the scenario and the tokens of the sessions it created (shown once).
   * Errors: `InvalidRequest` (scenario_member_unknown, …_duplicate, …_self_dependency,
   * …_dependency_without_task, …_dependent_without_task, …_dependency_cycle, title_*),
   * `Conflict` (scenario_name_taken), `Forbidden`, `NotFound` (session_not_found).
   */
  async create(input: CreateScenarioInput): Promise<CreatedScenario> {
    return this.t.unwrap('POST /v1/scenarios', this.t.api.POST('/v1/scenarios', { body: input }));
  }

  /**
   * One page of the scenarios you may read, in name order (`GET /v1/scenarios`): a user sees every
   * scenario, a session those it orchestrates or is a member of. Each is a summary (no members:
   * `get` has them) with `members`, scope-wide `done`/`total` and derived `complete`. Pass the
   * returned `nextCursor` as `cursor` for the next page (null on the last); `limit` ≤ list_limit.
   * Errors: `InvalidRequest` (invalid_cursor).
   */
  async list(query: ListScenariosQuery = {}): Promise<ScenarioList> {
    return this.t.unwrap('GET /v1/scenarios', this.t.api.GET('/v1/scenarios', { params: { query } }));
  }

  /** Every scenario you may read, all pages (`list` with the cursor followed to the end). */
  async listAll(query: Omit<ListScenariosQuery, 'cursor'> = {}): Promise<ScenarioSummary[]> {
    return collectPages(async (cursor) => {
      const page = await this.list({ ...query, cursor });
      return { rows: page.scenarios, nextCursor: page.nextCursor };
    });
  }

  /** A scenario by name or id (`GET /v1/scenarios/{name}`). Errors: `NotFound` (scenario_not_found, also when the caller is not a member). */
  async get(name: string): Promise<Scenario> {
    const r = await this.t.unwrap('GET /v1/scenarios/{name}', this.t.api.GET('/v1/scenarios/{name}', { params: { path: { name } } }));
    return r.scenario;
  }

  /**
   * Derived completion (`GET /v1/scenarios/{name}/status`): per member `done/total` (or `—` for no
   * tracked work), `complete`, `waitingOn` (the seed's WAITING ON, alias `blockedBy`); the scenario
   * is complete when every tracked member is. Errors: `NotFound` (also when the caller is not a member).
   */
  async status(name: string): Promise<ScenarioStatus> {
    return this.t.unwrap(
      'GET /v1/scenarios/{name}/status',
      this.t.api.GET('/v1/scenarios/{name}/status', { params: { path: { name }, query: { format: 'json' } } }),
    ) as Promise<ScenarioStatus>;
  }

  /** The same status as the server's text table (MEMBER, SESSION, DONE/TOTAL, RESULT, WAITING ON). */
  async statusText(name: string): Promise<string> {
    const r = await this.t.unwrap(
      'GET /v1/scenarios/{name}/status',
      this.t.api.GET('/v1/scenarios/{name}/status', { params: { path: { name }, query: { format: 'text' } }, parseAs: 'text' }),
    );
    return r as unknown as string;
  }

  /**
   * Publishes (or replaces) a member's result (`POST /v1/scenarios/{name}/members/{member}/result`);
   * `result` is any JSON value. A member with `requiresResult` completes only once it is published.
   * Who: the member's session, the orchestrator or a user. Errors: `NotFound` (scenario_not_found,
   * scenario_member_not_found), `Forbidden` (a member publishing another member's result).
   */
  async publishResult(name: string, member: string, result: unknown): Promise<PublishedResult> {
    return this.t.unwrap(
      'POST /v1/scenarios/{name}/members/{member}/result',
      this.t.api.POST('/v1/scenarios/{name}/members/{member}/result', { params: { path: { name, member } }, body: { result } }),
    );
  }
}
