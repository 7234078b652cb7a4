/**
 * The one catalogue of problem codes (docs/architecture.md §D5). Every `DomainError` names a code from
 * here; the error handler renders it as RFC 9457 problem+json; the OpenAPI document lists each
 * route's codes; `docs/errors.md` has a row per code and a test keeps the three equal.
 * Coord's own codes are snake_case; a seed's own codes are kept verbatim (TASK_GRAPH_INVALID…).
 */
export const ERROR_CATALOGUE = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  malformed_json: { status: 400, title: 'The request body is not valid JSON' },
  malformed_url: { status: 400, title: 'The request URL is not valid' },
  malformed_request: { status: 400, title: 'The request is not valid HTTP' },
  no_session_context: { status: 400, title: 'No scope: pass a scope or call as a session' },
  invalid_scope: { status: 400, title: 'The scope is not valid' },
  invalid_cursor: { status: 400, title: 'The cursor is not valid' },
  invalid_idempotency_key: { status: 400, title: 'The Idempotency-Key header is not valid' },
  unauthorized: { status: 401, title: 'A valid bearer token is required' },
  forbidden: { status: 403, title: 'Not permitted' },
  claim_requires_session: { status: 403, title: 'Claiming requires a session identity' },
  reserved_for_assignee: { status: 403, title: 'The item is reserved for its assignee' },
  not_found: { status: 404, title: 'Not found' },
  todo_not_found: { status: 404, title: 'Todo not found' },
  session_not_found: { status: 404, title: 'Session not found' },
  scope_not_found: { status: 404, title: 'Scope not found' },
  scenario_not_found: { status: 404, title: 'Scenario not found' },
  scenario_member_not_found: { status: 404, title: 'Scenario member not found' },
  token_not_found: { status: 404, title: 'Token not found' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  already_claimed: { status: 409, title: 'Already claimed' },
  dependency_blocked: { status: 409, title: 'Blocked by unfinished dependencies' },
  invalid_transition: { status: 409, title: 'Transition not allowed from the current state' },
  lease_expired: { status: 409, title: 'The claim lease has expired' },
  todo_referenced: { status: 409, title: 'Another item depends on this one' },
  session_not_active: { status: 409, title: 'The session is not active' },
  managed_by_graph: { status: 409, title: 'Graph subtasks change through the graph routes' },
  scenario_name_taken: { status: 409, title: 'The scenario name is taken' },
  token_name_taken: { status: 409, title: 'The token name is taken' },
  team_name_taken: { status: 409, title: 'The team name is taken' },
  token_limit_reached: { status: 409, title: 'Too many unrevoked tokens' },
  last_operator_token: { status: 409, title: 'The last operator token without an expiry cannot be revoked' },
  constraint_violation: { status: 409, title: 'The change conflicts with stored data' },
  idempotency_key_reused: { status: 409, title: 'The Idempotency-Key was used for a different request' },
  idempotency_key_in_progress: { status: 409, title: 'A request with this Idempotency-Key is still running' },
  revision_mismatch: { status: 412, title: 'The revision does not match If-Match' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  uri_too_long: { status: 414, title: 'A path segment is too long' },
  expectation_failed: { status: 417, title: 'The Expect header cannot be met' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  invalid_assignee: { status: 422, title: 'The assignee cannot claim in this scope' },
  invalid_next_filter: { status: 422, title: 'This scope takes no next filters' },
  rate_limited: { status: 429, title: 'Too many requests' },
  title_required: { status: 422, title: 'The title is empty' },
  title_too_long: { status: 422, title: 'The title is too long' },
  note_too_long: { status: 422, title: 'The note is too long' },
  result_too_large: { status: 422, title: 'The result is too large' },
  parent_not_found: { status: 422, title: 'The parent item does not exist' },
  hierarchy_too_deep: { status: 422, title: 'Sub-items are one level deep' },
  parent_scope_mismatch: { status: 422, title: 'A sub-item must share its parent’s scope' },
  dependency_empty: { status: 422, title: 'A dependency id is empty' },
  dependency_self: { status: 422, title: 'An item cannot depend on itself' },
  dependency_not_found: { status: 422, title: 'A dependency does not exist' },
  dependency_scope_mismatch: { status: 422, title: 'A dependency is in a different scope' },
  dependency_cycle: { status: 422, title: 'The dependency would create a cycle' },
  too_many_items: { status: 422, title: 'Too many items in one request' },
  invalid_ref: { status: 422, title: 'The ref is not usable' },
  duplicate_ref: { status: 422, title: 'A ref is used twice in the request' },
  unknown_ref: { status: 422, title: 'A ref names no item of the request' },
  scenario_member_unknown: { status: 422, title: 'A member depends on an unknown member' },
  scenario_member_duplicate: { status: 422, title: 'A member, session or dependency is listed twice' },
  scenario_member_self_dependency: { status: 422, title: 'A member cannot depend on itself' },
  scenario_dependency_without_task: { status: 422, title: 'A member depends on a member without a task' },
  scenario_dependent_without_task: { status: 422, title: 'A member with dependencies has no task' },
  scenario_dependency_cycle: { status: 422, title: 'The member dependencies form a cycle' },
  agent_not_registered: { status: 422, title: 'The Agent is not registered' },
  // Task Graph v1 (seed 002): the seed's own codes are kept verbatim.
  TASK_GRAPH_INVALID: { status: 400, title: 'The Task Graph or Intent Map is invalid' },
  graph_not_found: { status: 404, title: 'Task Graph not found' },
  TASK_NOT_FOUND: { status: 404, title: 'Task Graph subtask not found' },
  TASK_ALREADY_RUNNING: { status: 409, title: 'The subtask is already running' },
  AGENT_RUNTIME_ERROR: { status: 422, title: 'The completion evidence does not verify' },
  TASK_STATE_CONFLICT: { status: 409, title: 'The Task Graph state conflicts with the request' },
  DISPATCH_INTERRUPTED: { status: 409, title: 'The dispatch was interrupted before this report' },
  INVALID_AGENT_CONFIG: { status: 409, title: 'The agents registry contradicts the graph' },
  agent_exists: { status: 409, title: 'The Agent is already registered' },
  // metagit RFC-0008 (seed 001).
  intent_not_found: { status: 404, title: 'Intent not found' },
  task_graph_not_found: { status: 404, title: 'Task graph not found' },
  task_node_not_found: { status: 404, title: 'Task node not found' },
  intent_exists: { status: 409, title: 'The intent id is taken' },
  task_graph_exists: { status: 409, title: 'The task graph id is taken' },
  node_id_taken: { status: 409, title: 'The node id is taken in this graph' },
  too_many_streams: { status: 503, title: 'Too many open event streams' },
  busy: { status: 503, title: 'The database is busy; retry' },
  database_unavailable: { status: 503, title: 'The database is unavailable' },
  shutting_down: { status: 503, title: 'This replica is shutting down' },
  internal_error: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** One field problem inside a problem document's `errors[]`. */
export interface FieldProblem {
  /** JSON pointer-ish path, e.g. `body.title` or `query.limit`. */
  path: string;
  message: string;
}

/**
 * An expected failure that a client can cause. Services throw these; the single error handler
 * renders them. `extra` members are added to the problem document (e.g. `blockedBy`).
 */
export class DomainError extends Error {
  readonly status: number;
  constructor(
    readonly code: string,
    detail: string,
    readonly extra: Record<string, unknown> = {},
    status?: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.status = status ?? (ERROR_CATALOGUE as Record<string, { status: number }>)[code]?.status ?? 500;
  }
}

/** Shorthand: `fail('todo_not_found', 'todo not found')`. */
export function fail(code: ErrorCode, detail: string, extra: Record<string, unknown> = {}): never {
  throw new DomainError(code, detail, extra);
}
