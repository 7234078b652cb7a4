/**
 * Friendly names for the generated OpenAPI types (sdk/src/generated/openapi.ts). Only aliases
 * live here: the shapes come from the document.
 */
import type { components, paths } from './generated/openapi.js';

type Schemas = components['schemas'];
type JsonBody<T> = T extends { content: { 'application/json': infer B } } ? B : never;

/** A todo item as every read returns it: effective status, `blockedBy`, `whyBlocked`, lease (seed 000 "Items"). */
export type TodoItem = Schemas['TodoItem'];
/** `todo` | `in-progress` | `done` | `blocked` (effective). */
export type TodoStatus = Schemas['TodoStatus'];
/** One page of items in (position, id) order; `nextCursor` is null on the last page. */
export type TodoList = Schemas['TodoList'];
/** `{claimed:false}` when nothing is eligible (seed 000 "Claiming"): not an error. */
export type ClaimResult = Schemas['ClaimResult'];
/** Why an item is (not) claimable, from the claim's own predicate. */
export type Readiness = Schemas['Readiness'];
/** The body of `todos.add`. */
export type AddTodoInput = Schemas['AddTodo'];
/** The body of `todos.next`: scope, filters (`tags` every one, `anyTags` at least one, `minPriority`, `assignedToMe`) and `waitMs` (≤ 60000). */
export type NextInput = Schemas['NextRequest'];
/** The body of `todos.addMany`: an optional `scope` and the items (each a single add's fields but `scope`, plus `ref` and `parentRef`). */
export type AddManyTodosInput = Schemas['AddManyTodos'];
/** One item of `todos.addMany`. */
export type AddManyTodoItem = Schemas['AddManyTodoItem'];
/** The answer of `todos.addMany`: the new items in request order and each `ref` → its item's id. */
export type AddManyTodosResult = Schemas['AddManyTodosResult'];
/** The body of `todos.edit`: absent fields are unchanged; `dependsOn: []` clears. */
export type EditTodoInput = Schemas['EditTodo'];
/** Query of `todos.list`: scope, status (effective), tag, owner (`me`), assignee, all, limit, cursor. */
export type ListTodosQuery = NonNullable<paths['/v1/todos']['get']['parameters']['query']>;

/** A registered agent session. */
export type Session = Schemas['Session'];
/** The body of `sessions.create`: name, parentId (default: the calling session), systemKind (users only). */
export type CreateSessionInput = NonNullable<JsonBody<NonNullable<paths['/v1/sessions']['post']['requestBody']>>>;
/** `{session, token}`: the token is shown once. */
export type CreatedSession = JsonBody<paths['/v1/sessions']['post']['responses'][201]>;
/** Query of `sessions.list`. */
export type ListSessionsQuery = NonNullable<paths['/v1/sessions']['get']['parameters']['query']>;
/** One page of sessions. */
export type SessionList = JsonBody<paths['/v1/sessions']['get']['responses'][200]>;
/** `{session, reopened, stoppedDescendants}`: the items reopened across the stopped subtree, and the descendants stopped with it. */
export type StoppedSession = JsonBody<paths['/v1/sessions/{id}/stop']['post']['responses'][200]>;
/** `{sessionId, lastSeenAt, heartbeatIntervalMs?, autoStopAfter?}`: the answer to `sessions.heartbeat`. */
export type SessionHeartbeat = JsonBody<paths['/v1/sessions/me/heartbeat']['post']['responses'][200]>;
/** What a session holds: the count of its in-progress items and the longest held few (`{id, scope, title, since}`). */
export type SessionHolding = NonNullable<Session['holding']>;
/** `GET /v1/me`: who the token belongs to, its team (and an operator's role), and a session's default scope. */
export type Me = JsonBody<paths['/v1/me']['get']['responses'][200]>;

/** An event as the JSON log returns it: `seq`, `topic`, `event`, `at`, `data` (the payload). */
export type EventRecord = Schemas['Event'];
/** `GET /v1/events/log`: a page of events, the cursor for the next call, and whether to resync. */
export type EventLogPage = JsonBody<paths['/v1/events/log']['get']['responses'][200]>;

/** The running `[todo]` configuration (users only). */
export type TodoConfigView = JsonBody<paths['/v1/admin/config']['get']['responses'][200]>;
/** What a reload applied and which keys need a restart. */
export type ReloadResult = JsonBody<paths['/v1/admin/reload']['post']['responses'][200]>;

/** One dependency of an item with its effective status and, when done with one, its result. */
export type DependencyResult = Schemas['DependencyResult'];
/** `GET /v1/todos/{id}/dependencies`: `{id, dependencies}`, the dependencies in sorted id order. */
export type DependencyResults = Schemas['DependencyResults'];
/** The body of `todos.done`: an optional `result` (a string or any JSON value). */
export type DoneTodoInput = Schemas['DoneTodo'];
/** The answer of a `done` that asked for `next`: the completed item and the claim made after it (`next` always set). */
export type DoneResult = Omit<Schemas['DoneResult'], 'next'> & { next: ClaimResult };

/** A scenario as `scenarios.list` returns it: the record without members, with derived progress. */
export type ScenarioSummary = Schemas['ScenarioSummary'];
/** One page of scenarios in name order; `nextCursor` is null on the last page. */
export type ScenarioList = Schemas['ScenarioList'];
/** Query of `scenarios.list`: limit, cursor. */
export type ListScenariosQuery = NonNullable<paths['/v1/scenarios']['get']['parameters']['query']>;

/** A scenario with its members (seed 000 "In scenarios"). */
export type Scenario = Schemas['Scenario'];
/** The body of `scenarios.create`: name, optional orchestrator, members (name, session?, task?, dependsOn?, requiresResult?). */
export type CreateScenarioInput = Schemas['CreateScenario'];
/** `{scenario, orchestratorToken?, tokens}`: tokens of the sessions created for it, shown once. */
export type CreatedScenario = Schemas['CreatedScenario'];
/** Derived completion: per-member progress, WAITING ON, and whether the scenario is complete. */
export type ScenarioStatus = Schemas['ScenarioStatus'];
/** `{member, scenarioComplete}` after publishing a result. */
export type PublishedResult = Schemas['PublishedResult'];

/** A list the caller may read, with stored-status counts and its override authority there (`GET /v1/scopes`). */
export type ScopeSummary = Schemas['ScopeSummary'];
/** One page of scopes in scope order; `nextCursor` is null on the last page. */
export type ScopeList = Schemas['ScopeList'];

/** A bearer token, never its secret (`/v1/tokens`). */
export type Token = Schemas['Token'];
/** `{tokens}` from `GET /v1/tokens`. */
export type TokenList = Schemas['TokenList'];
/** `{token, secret}`: the secret is shown only by create and rotate. */
export type TokenWithSecret = Schemas['TokenWithSecret'];

/** A team with its number of operators (`/v1/teams`). */
export type Team = Schemas['Team'];
/** `{teams}` from `GET /v1/teams`. */
export type TeamList = Schemas['TeamList'];
/** An operator of a team: `{id, name, teamId, role, createdAt}` (never its tokens). */
export type TeamOperator = Schemas['TeamOperator'];
/** A team with its operators (`GET /v1/teams/{id}`). */
export type TeamDetail = Schemas['TeamDetail'];
/** `{team, operator, token, secret}` from `POST /v1/teams`: the secret is shown only here. */
export type CreatedTeam = Schemas['CreatedTeam'];
/** `{operator, token, secret}` from `POST /v1/teams/{id}/operators`: the secret is shown only here. */
export type OperatorWithSecret = Schemas['OperatorWithSecret'];

/** Who made a change: `{kind: 'user' | 'session' | 'system', id, token}` (`token`: the token's name). */
export type Actor = Schemas['Actor'];
/** One change in the audit: the event with its actor (`GET /v1/audit`). */
export type AuditEntry = Schemas['AuditEntry'];
/** `{entries, nextCursor}`, newest first; `nextCursor` is null on the last page. */
export type AuditPage = Schemas['AuditPage'];
/** The filters and paging of `GET /v1/audit`. */
export type AuditQuery = NonNullable<paths['/v1/audit']['get']['parameters']['query']>;
/** Something stuck, why, since when and the requests that resolve it (`GET /v1/attention`). */
export type AttentionEntry = Schemas['AttentionEntry'];
/** `{entries, nextCursor}`, oldest condition first; `nextCursor` is null on the last page. */
export type AttentionPage = Schemas['AttentionPage'];
/** The filter (`kind`) and paging of `GET /v1/attention`. */
export type AttentionQuery = NonNullable<paths['/v1/attention']['get']['parameters']['query']>;
