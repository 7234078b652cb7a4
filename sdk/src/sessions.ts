/**
 * `client.sessions`: registering and stopping agent sessions (docs/architecture.md §D2) over `/v1/sessions`.
 */
import { collectPages, type Transport } from './transport.js';
import type { CreateSessionInput, CreatedSession, ListSessionsQuery, Session, SessionHeartbeat, SessionList, StoppedSession } from './types.js';

export class SessionsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Registers a session (`POST /v1/sessions`). A user registers a root session or a child of any
   * session; a session registers children of itself (`parentId` defaults to the caller). Returns
   * the session and its bearer token, which is shown once. `heartbeatIntervalMs` (5,000 –
   * 86,400,000 ms) makes the session auto-stop after that long without an authenticated call.
   * Errors: `Forbidden`, `NotFound` (session_not_found parent), `SessionNotActive` (stopped parent).
   */
  async create(input: CreateSessionInput = {}): Promise<CreatedSession> {
    return this.t.unwrap('POST /v1/sessions', this.t.api.POST('/v1/sessions', { body: input }));
  }

  /**
   * One page of sessions (`GET /v1/sessions`): users see all, a session its own subtree. Each has
   * `alive`, `lastSeenAt` (accurate to about a second) and `holding`; `alive: 'true' | 'false'` filters.
   */
  async list(query: Partial<ListSessionsQuery> = {}): Promise<SessionList> {
    return this.t.unwrap('GET /v1/sessions', this.t.api.GET('/v1/sessions', { params: { query: query as ListSessionsQuery } }));
  }

  /** Every session matching `query`, following `nextCursor` to the end. */
  async listAll(query: Partial<ListSessionsQuery> = {}): Promise<Session[]> {
    return collectPages(async (cursor) => {
      const page = await this.list({ ...query, cursor });
      return { rows: page.sessions, nextCursor: page.nextCursor };
    }, query.cursor);
  }

  /** One session (`GET /v1/sessions/{id}`). Errors: `NotFound` (also outside your subtree). */
  async get(id: string): Promise<Session> {
    const r = await this.t.unwrap('GET /v1/sessions/{id}', this.t.api.GET('/v1/sessions/{id}', { params: { path: { id } } }));
    return r.session;
  }

  /**
   * Marks the calling session seen now (`POST /v1/sessions/me/heartbeat`; no event): what an idle
   * agent with a heartbeat interval calls to stay alive (any other call counts too, within about
   * a second). Returns `lastSeenAt` and, with an interval, `autoStopAfter`. Sessions only.
   * Errors: `Forbidden` (an operator token), `Unauthorized` (the session has stopped).
   */
  async heartbeat(): Promise<SessionHeartbeat> {
    return this.t.unwrap('POST /v1/sessions/me/heartbeat', this.t.api.POST('/v1/sessions/me/heartbeat', { body: {} }));
  }

  /**
   * Stops a session (`POST /v1/sessions/{id}/stop`) and its active descendants, in one
   * transaction: their tokens stop working and their in-progress items reopen (seed 000
   * "Reclaiming stranded work"); `reopened` lists the items, `stoppedDescendants` the
   * descendants. A user, the session itself or an ancestor may. Idempotent. Errors: `Forbidden`, `NotFound`.
   */
  async stop(id: string): Promise<StoppedSession> {
    return this.t.unwrap('POST /v1/sessions/{id}/stop', this.t.api.POST('/v1/sessions/{id}/stop', { params: { path: { id } }, body: {} }));
  }

  /** Soft-deletes a session (`DELETE /v1/sessions/{id}`): like `stop`, and the session reads `deleted` (its descendants read `stopped`). */
  async delete(id: string): Promise<StoppedSession> {
    return this.t.unwrap('DELETE /v1/sessions/{id}', this.t.api.DELETE('/v1/sessions/{id}', { params: { path: { id } } }));
  }
}
