/**
 * Typed errors built from Coord's RFC 9457 problem documents (docs/architecture.md §D5, docs/errors.md).
 *
 * Every failure the SDK throws is a `CoordError`. Its class is chosen by the problem's stable
 * `code` first (`AlreadyClaimed`, `LeaseExpired`, `TaskGraphInvalid`, …) and by the HTTP status
 * otherwise, so a code the SDK does not know yet still lands in the right family:
 *
 * | family              | status             | code classes                                                        |
 * | ------------------- | ------------------ | ------------------------------------------------------------------- |
 * | `InvalidRequest`    | 400, 413, 415, 422 | `ValidationFailed` (`errors[]`), `TaskGraphInvalid` (`stage`)       |
 * | `Unauthorized`      | 401                |                                                                     |
 * | `Forbidden`         | 403                | `ClaimRequiresSession`, `ReservedForAssignee`                       |
 * | `NotFound`          | 404                | (`todo_not_found`, `session_not_found`, `scope_not_found`, …)       |
 * | `Conflict`          | 409                | `AlreadyClaimed`, `DependencyBlocked`, `InvalidTransition`, `LeaseExpired`, `TodoReferenced`, `SessionNotActive`, `TaskStateConflict`, `IdempotencyKeyReused`, `IdempotencyKeyInProgress` |
 * | `RevisionMismatch`  | 412                |                                                                     |
 * | `RateLimited`       | 429                | (`rate_limited`; `retryAfterMs`)                                    |
 * | `Unavailable`       | 503                | (`busy`, `database_unavailable`, `shutting_down`, `too_many_streams`; `retryAfterMs`) |
 * | `ServerError`       | other 5xx          |                                                                     |
 * | `ConnectionFailed`  | — (client side)    | the server could not be reached (`status` 0)                        |
 */

/** An RFC 9457 problem document as Coord sends it (`code` is always present). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  /** Stable machine code from the catalogue (docs/errors.md), or a seed's own code such as `TASK_GRAPH_INVALID`. */
  code: string;
  /** Field problems (`validation_failed`). */
  errors?: { path: string; message: string }[];
  [member: string]: unknown;
}

/** Base class of everything the SDK throws for a failed call. */
export class CoordError extends Error {
  /** HTTP status; 0 when the server was not reached. */
  readonly status: number;
  /** The problem's stable `code` (`already_claimed`, `TASK_GRAPH_INVALID`, …). */
  readonly code: string;
  /** The problem's `title` (the catalogue's text for the code). */
  readonly title: string;
  /** The problem's `detail`: the human explanation for this occurrence. */
  readonly detail: string;
  /** The whole problem document, including extra members such as `blockedBy`. */
  readonly problem: Problem;
  /** The method and path that failed, e.g. `POST /v1/todos/td-1/claim`. */
  readonly request?: string;

  constructor(status: number, problem: Problem, request?: string) {
    const detail = problem.detail ?? problem.title ?? problem.code;
    super(detail);
    this.name = new.target.name;
    this.status = status;
    this.code = problem.code;
    this.title = problem.title ?? problem.code;
    this.detail = detail;
    this.problem = problem;
    this.request = request;
  }
}

/** 400/413/415/422: the request itself is not acceptable; sending it again will fail again. */
export class InvalidRequest extends CoordError {}
/** 400 `validation_failed`: `fieldErrors` names each field (`body.title`, `query.limit`, …). */
export class ValidationFailed extends InvalidRequest {
  get fieldErrors(): { path: string; message: string }[] {
    return this.problem.errors ?? [];
  }
}
/**
 * `TASK_GRAPH_INVALID` (Task Graph v1 contract, seed 002): the graph or intent map was refused.
 * `stage` says which check refused it (`graph-validation`, `intent-map-validation`,
 * `graph-scheduling`, `graph-advance`, …).
 */
export class TaskGraphInvalid extends InvalidRequest {
  get stage(): string | undefined {
    return typeof this.problem.stage === 'string' ? this.problem.stage : undefined;
  }
  /** The contract's `details` (`{parentTaskId, subtaskId, …}`), when the server sent them. */
  get details(): Record<string, unknown> | undefined {
    return this.problem.details && typeof this.problem.details === 'object' ? (this.problem.details as Record<string, unknown>) : undefined;
  }
  /** The parent task id the refusal is about, when known. */
  get taskId(): string | undefined {
    return typeof this.problem.taskId === 'string' ? this.problem.taskId : undefined;
  }
}
/** 401: no token, an unknown one, or the token of a stopped session. */
export class Unauthorized extends CoordError {}
/** 403: the caller is known but the seed's authority rules refuse the action. */
export class Forbidden extends CoordError {}
/** 403 `claim_requires_session`: a user (operator) tried to claim; only sessions claim. */
export class ClaimRequiresSession extends Forbidden {}
/** 403 `reserved_for_assignee`: the item is reserved for another session. */
export class ReservedForAssignee extends Forbidden {}
/** 404: the thing does not exist, or the caller may not know it exists (docs/architecture.md §D2). */
export class NotFound extends CoordError {}
/** 409: the current state does not allow the action. */
export class Conflict extends CoordError {}
/** 409 `already_claimed`: another session won the claim (seed 000 "Claiming"). Not a failure of yours. */
export class AlreadyClaimed extends Conflict {}
/** 409 `dependency_blocked`: unfinished dependencies; `blockedBy` lists them. */
export class DependencyBlocked extends Conflict {
  get blockedBy(): string[] {
    return Array.isArray(this.problem.blockedBy) ? (this.problem.blockedBy as string[]) : [];
  }
}
/** 409 `invalid_transition`: the state machine does not allow this move from the current status. */
export class InvalidTransition extends Conflict {}
/** 409 `lease_expired`: the caller's claim lapsed (no progress for `claim_lease`); claim again. */
export class LeaseExpired extends Conflict {}
/** 409 `todo_referenced`: another item depends on the one being removed. */
export class TodoReferenced extends Conflict {}
/** 409 `session_not_active`: the session was stopped or deleted. */
export class SessionNotActive extends Conflict {}
/**
 * 409 `TASK_STATE_CONFLICT` (Task Graph v1 contract, seed 002): a graph with that id exists, or
 * persisted facts contradict each other (`stage` `graph-scheduling`; never repaired).
 */
export class TaskStateConflict extends Conflict {
  get stage(): string | undefined {
    return typeof this.problem.stage === 'string' ? this.problem.stage : undefined;
  }
}
/**
 * 409 `idempotency_key_reused`: the `Idempotency-Key` was first used for another request (body,
 * path or method; `firstRequest` names it). Nothing was done. The SDK picks a fresh key per call,
 * so this means a key passed in by hand was reused.
 */
export class IdempotencyKeyReused extends Conflict {}
/**
 * 409 `idempotency_key_in_progress`: the first request with this key has not answered yet
 * (`retryAfterMs`). The SDK retries it; thrown when it still is after `retries`. If it persists
 * until `expiresAt`, read the state (the first attempt's outcome is unknown; docs/reference/http-api.md "Safe retries").
 */
export class IdempotencyKeyInProgress extends Conflict {
  retryAfterMs?: number;
  /** When the server forgets the key (ISO 8601), when it said. */
  get expiresAt(): string | undefined {
    return typeof this.problem.expiresAt === 'string' ? this.problem.expiresAt : undefined;
  }
}
/** 412 `revision_mismatch`: `If-Match` named a revision the item has moved past; re-read and retry. */
export class RevisionMismatch extends CoordError {}
/** 429 `rate_limited`: this token made too many requests on this replica; nothing was done, retry after `retryAfterMs`. */
export class RateLimited extends CoordError {
  /** From the `Retry-After` header, in milliseconds. */
  retryAfterMs?: number;
}
/** 503: busy, database unavailable, replica shutting down or too many streams; retry after `retryAfterMs`. */
export class Unavailable extends CoordError {
  /** From the `Retry-After` header, in milliseconds, when the server sent one. */
  retryAfterMs?: number;
}
/** 500 and other 5xx: a bug or an outage on the server side. */
export class ServerError extends CoordError {}
/** The server could not be reached (connection refused, DNS, reset before a response). `status` is 0. */
export class ConnectionFailed extends CoordError {
  constructor(
    readonly baseUrl: string,
    readonly cause: unknown,
    request?: string,
  ) {
    const reason = describeCause(cause);
    super(0, { code: 'connection_failed', title: 'Cannot reach Coord', detail: `cannot reach Coord at ${baseUrl}: ${reason}` }, request);
  }
}

type ErrorClass = new (status: number, problem: Problem, request?: string) => CoordError;

/** Code → class, for the codes that deserve their own class. */
const BY_CODE: Record<string, ErrorClass> = {
  validation_failed: ValidationFailed,
  TASK_GRAPH_INVALID: TaskGraphInvalid,
  claim_requires_session: ClaimRequiresSession,
  reserved_for_assignee: ReservedForAssignee,
  already_claimed: AlreadyClaimed,
  dependency_blocked: DependencyBlocked,
  invalid_transition: InvalidTransition,
  lease_expired: LeaseExpired,
  todo_referenced: TodoReferenced,
  session_not_active: SessionNotActive,
  TASK_STATE_CONFLICT: TaskStateConflict,
  idempotency_key_reused: IdempotencyKeyReused,
  idempotency_key_in_progress: IdempotencyKeyInProgress,
  revision_mismatch: RevisionMismatch,
  rate_limited: RateLimited,
};

function familyFor(status: number): ErrorClass {
  if (status === 400 || status === 413 || status === 415 || status === 422) return InvalidRequest;
  if (status === 401) return Unauthorized;
  if (status === 403) return Forbidden;
  if (status === 404) return NotFound;
  if (status === 409) return Conflict;
  if (status === 412) return RevisionMismatch;
  if (status === 429) return RateLimited;
  if (status === 503) return Unavailable;
  if (status >= 500) return ServerError;
  return InvalidRequest;
}

/**
 * Builds the typed error for a failed response. `body` is the parsed problem document (or
 * whatever the server sent: a non-problem body becomes `code: http_<status>`).
 */
export function errorFromProblem(status: number, body: unknown, opts: { request?: string; headers?: Headers } = {}): CoordError {
  const problem: Problem =
    body && typeof body === 'object' && typeof (body as Problem).code === 'string'
      ? (body as Problem)
      : { code: `http_${status}`, title: `HTTP ${status}`, status, detail: typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${status}` };
  const Cls = BY_CODE[problem.code] ?? familyFor(status);
  const err = new Cls(status, problem, opts.request);
  if (err instanceof Unavailable || err instanceof RateLimited || err instanceof IdempotencyKeyInProgress) {
    const ra = opts.headers?.get('retry-after');
    if (ra && /^\d+$/.test(ra)) err.retryAfterMs = Number(ra) * 1000;
  }
  return err;
}

/** Reads a failed `Response` into its typed error. */
export async function errorFromResponse(res: Response, request?: string): Promise<CoordError> {
  let text = '';
  try {
    text = await res.text();
  } catch {
    /* body lost: the status is enough */
  }
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return errorFromProblem(res.status, body, { request, headers: res.headers });
}

function describeCause(cause: unknown): string {
  const c = cause as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  return c?.cause?.code ?? c?.cause?.message ?? c?.message ?? String(cause);
}
