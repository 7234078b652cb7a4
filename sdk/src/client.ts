/**
 * `createClient({ baseUrl, token })`: the Coord SDK's entry point. One object with a facade per
 * domain (`todos`, `sessions`, `tokens`, `teams`, `scopes`, `scenarios`, `graphs`, `agents`, `events`, `admin`) over the generated, typed openapi-fetch client
 * (`raw`, for anything the facade does not cover).
 */
import type { Client } from 'openapi-fetch';
import { AdminApi } from './admin.js';
import { AttentionApi } from './attention.js';
import { AuditApi } from './audit.js';
import { EventsApi } from './events.js';
import { AgentsApi, GraphsApi } from './graphs.js';
import { IntentsApi, MetagitApi } from './metagit.js';
import type { paths } from './generated/openapi.js';
import { ScenariosApi } from './scenarios.js';
import { ScopesApi } from './scopes.js';
import { SessionsApi } from './sessions.js';
import { TodosApi } from './todos.js';
import { TeamsApi } from './teams.js';
import { TokensApi } from './tokens.js';
import { Transport, type ClientOptions } from './transport.js';
import type { Me } from './types.js';

export class CoordClient {
  /** Todo items: add, list, claim, next, done, block, reopen, deps, assign, heartbeat, … (seed 000). */
  readonly todos: TodosApi;
  /** Agent sessions: create (token shown once), list, get, stop, delete. */
  readonly sessions: SessionsApi;
  /** Your bearer tokens: list, create (secret shown once), rotate, revoke. */
  readonly tokens: TokensApi;
  /** Teams and their operators: create (the server administrator; secret shown once), list, get, addOperator. */
  readonly teams: TeamsApi;
  /** Who did what (operators): every stored change with its actor, newest first. */
  readonly audit: AuditApi;
  /** What is stuck in the team, why, and the requests that resolve it (operators), oldest first. */
  readonly attention: AttentionApi;
  /** The lists the caller may read, with progress (`GET /v1/scopes`). */
  readonly scopes: ScopesApi;
  /** Scenarios: create, get, status (derived completion), publishResult (seed 000 "In scenarios"). */
  readonly scenarios: ScenariosApi;
  /** Task Graph v1: validate, create, list, get (status), inspect, plan (seed 002). */
  readonly graphs: GraphsApi;
  /** The configured Agents that graphs name: register, list. */
  readonly agents: AgentsApi;
  /** metagit RFC-0008 task graphs: create, expand, ready, start, block, complete, cancel, bind-acl. */
  readonly metagit: MetagitApi;
  /** @deprecated The former name of `metagit` (the same object); kept so existing callers still work. */
  readonly taskGraphs: MetagitApi;
  /** metagit TaskIntents. */
  readonly intents: IntentsApi;
  /** Topic events: `log` (JSON pages) and `follow` (SSE that resumes). */
  readonly events: EventsApi;
  /** Configuration read and reload (the server administrator only). */
  readonly admin: AdminApi;
  /** The generated openapi-fetch client, typed by the OpenAPI document; the auth header is already set. */
  readonly raw: Client<paths>;
  /** The base URL without a trailing slash. */
  readonly baseUrl: string;
  private readonly t: Transport;

  constructor(opts: ClientOptions) {
    this.t = new Transport(opts);
    this.raw = this.t.api;
    this.baseUrl = this.t.baseUrl;
    this.todos = new TodosApi(this.t);
    this.sessions = new SessionsApi(this.t);
    this.scenarios = new ScenariosApi(this.t);
    this.scopes = new ScopesApi(this.t);
    this.tokens = new TokensApi(this.t);
    this.audit = new AuditApi(this.t);
    this.attention = new AttentionApi(this.t);
    this.teams = new TeamsApi(this.t);
    this.graphs = new GraphsApi(this.t);
    this.agents = new AgentsApi(this.t);
    this.metagit = new MetagitApi(this.t);
    this.taskGraphs = this.metagit;
    this.intents = new IntentsApi(this.t);
    this.events = new EventsApi(this.t);
    this.admin = new AdminApi(this.t);
  }

  /**
   * Who the token belongs to (`GET /v1/me`): `{kind: 'user'|'session', id, name, teamId}`, plus an
   * operator's `role` and a session's default `scope` and record. Errors: `Unauthorized`.
   */
  async me(): Promise<Me> {
    return this.t.unwrap('GET /v1/me', this.t.api.GET('/v1/me'));
  }
}

/**
 * Builds a client. `baseUrl` is the server (e.g. `http://127.0.0.1:3000`); `token` a user's or a
 * session's bearer token. Every facade method returns plain data or throws a typed `CoordError`.
 */
export function createClient(opts: ClientOptions): CoordClient {
  return new CoordClient(opts);
}
