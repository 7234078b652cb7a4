/**
 * `client.todos`: the todo seed's operations (seed 000, `gr todo …`) over `/v1/todos`.
 * Every method returns plain data or throws a typed `CoordError` (see errors.ts).
 */
import { AlreadyClaimed, type CoordError, DependencyBlocked, ReservedForAssignee } from './errors.js';
import type { Transport } from './transport.js';
import { claims, withClaim, work, type ClaimContext, type ClaimLoopOptions, type WithClaimOptions, type WithClaimResult, type WorkSummary } from './work.js';
import type {
  AddManyTodoItem,
  AddManyTodosResult,
  AddTodoInput,
  ClaimResult,
  DependencyResults,
  DoneResult,
  DoneTodoInput,
  EditTodoInput,
  ListTodosQuery,
  NextInput,
  Readiness,
  TodoItem,
  TodoList,
} from './types.js';

/** Options of the edits that take an optimistic-concurrency guard. */
export interface IfMatch {
  /** The revision you read (the item's `revision`, also its ETag); the server answers 412 `RevisionMismatch` when it moved on. */
  ifMatch?: number;
}

/** The answer of `tryClaim`: claimed, or why not (never thrown for the ordinary "someone else has it" cases). */
export interface TryClaimResult {
  claimed: boolean;
  item?: TodoItem;
  /** Why the item was not claimable: `AlreadyClaimed`, `DependencyBlocked` or `ReservedForAssignee`. */
  reason?: CoordError;
}

const ifMatchHeader = (o?: IfMatch) => (o?.ifMatch === undefined ? undefined : { 'if-match': `"${o.ifMatch}"` });

export class TodosApi {
  constructor(private readonly t: Transport) {}

  /**
   * Adds an item (`POST /v1/todos`; seed 000 "Items", "Dependencies"). Default scope: the calling
   * session's subtree root; a user must pass `scope`. The title is trimmed (1..max_title bytes),
   * tags are trimmed, de-duplicated and sorted, duplicate `dependsOn` ids fold.
   * Errors: `InvalidRequest` (title_required, title_too_long, note_too_long, parent_not_found,
   * hierarchy_too_deep, parent_scope_mismatch, dependency_*, no_session_context, invalid_scope),
   * `Forbidden` (assigning to another session without override authority), `NotFound` (scope_not_found).
   */
  async add(input: AddTodoInput): Promise<TodoItem> {
    const r = await this.t.unwrap('POST /v1/todos', this.t.api.POST('/v1/todos', { body: input }));
    return r.item;
  }

  /**
   * Adds many items to one scope in one transaction, all or nothing (`POST /v1/todos/bulk`):
   * at most `list_limit` items (default 2000), each with a single add's fields and rules. Items name
   * each other by `ref` (unique in the request, not starting with `td-`): `parentRef` makes a
   * sub-item of another new item, and a `dependsOn` entry is an existing item id when it starts
   * with `td-`, else a ref. Positions and `added` events follow the array's order. Returns the
   * new items in that order and `refs` (ref → id).
   * Errors: `InvalidRequest` (too_many_items, invalid_ref, duplicate_ref, unknown_ref,
   * dependency_cycle among the new items, and every code of `add`; the problem's `index` and
   * `ref` name the offending item), `Forbidden`, `NotFound` (scope_not_found), `Conflict` (managed_by_graph).
   */
  async addMany(items: AddManyTodoItem[], opts: { scope?: string } = {}): Promise<AddManyTodosResult> {
    const body = opts.scope === undefined ? { items } : { scope: opts.scope, items };
    return this.t.unwrap('POST /v1/todos/bulk', this.t.api.POST('/v1/todos/bulk', { body }));
  }

  /**
   * One page of items in (position, id) order (`GET /v1/todos`). `status` filters on the effective
   * status (`todo` = ready only; `blocked` = manual blocks plus dependency waiting). `owner: 'me'`
   * means the caller. Pass the returned `nextCursor` as `cursor` for the next page; it is null on
   * the last one. Errors: `InvalidRequest` (invalid_cursor, no_session_context), `Forbidden`, `NotFound`.
   */
  async list(query: ListTodosQuery = {}): Promise<TodoList> {
    return this.t.unwrap('GET /v1/todos', this.t.api.GET('/v1/todos', { params: { query } }));
  }

  /** Every item matching `query`, page by page (`list` with the cursor followed to the end). */
  async *iterate(query: ListTodosQuery = {}): AsyncGenerator<TodoItem> {
    let cursor: string | undefined = query.cursor;
    for (;;) {
      const page = await this.list({ ...query, cursor });
      yield* page.items;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  /** Every item matching `query` as one array (all pages; lists are never silently truncated). */
  async listAll(query: ListTodosQuery = {}): Promise<TodoItem[]> {
    const out: TodoItem[] = [];
    for await (const item of this.iterate(query)) out.push(item);
    return out;
  }

  /** One item (`GET /v1/todos/{id}`). Errors: `NotFound` (todo_not_found, also for items outside your scopes). */
  async get(id: string): Promise<TodoItem> {
    const r = await this.t.unwrap('GET /v1/todos/{id}', this.t.api.GET('/v1/todos/{id}', { params: { path: { id } } }));
    return r.item;
  }

  /** Why an item is or is not claimable (`GET /v1/todos/{id}/readiness`), from the claim's own predicate. */
  async readiness(id: string): Promise<Readiness> {
    return this.t.unwrap('GET /v1/todos/{id}/readiness', this.t.api.GET('/v1/todos/{id}/readiness', { params: { path: { id } } }));
  }

  /**
   * Edits title, note, tags, position and/or dependencies in one revision (`PATCH /v1/todos/{id}`).
   * Owner, override authority or a user. Errors: `RevisionMismatch` (412, with `ifMatch`),
   * `LeaseExpired`, `InvalidRequest` (title_*, note_too_long, dependency_* incl. dependency_cycle),
   * `Forbidden`, `NotFound`.
   */
  async edit(id: string, patch: EditTodoInput, opts?: IfMatch): Promise<TodoItem> {
    const r = await this.t.unwrap(
      'PATCH /v1/todos/{id}',
      this.t.api.PATCH('/v1/todos/{id}', { params: { path: { id }, header: ifMatchHeader(opts) }, body: patch }),
    );
    return r.item;
  }

  /**
   * Replaces the dependency set (`PUT /v1/todos/{id}/dependencies`; seed 000 `gr todo deps`);
   * `[]` clears it. Ids are trimmed, duplicates fold; self, unknown, cross-scope and cyclic edges are
   * refused (`InvalidRequest` dependency_*), leaving the old set untouched.
   */
  async setDependencies(id: string, dependsOn: string[], opts?: IfMatch): Promise<TodoItem> {
    const r = await this.t.unwrap(
      'PUT /v1/todos/{id}/dependencies',
      this.t.api.PUT('/v1/todos/{id}/dependencies', { params: { path: { id }, header: ifMatchHeader(opts) }, body: { dependsOn } }),
    );
    return r.item;
  }

  /**
   * Removes an item and its sub-items (`DELETE /v1/todos/{id}`); returns the removed ids.
   * Errors: `TodoReferenced` (another item depends on it), `Forbidden`, `NotFound`.
   */
  async remove(id: string): Promise<{ removed: string[] }> {
    return this.t.unwrap('DELETE /v1/todos/{id}', this.t.api.DELETE('/v1/todos/{id}', { params: { path: { id } } }));
  }

  /**
   * Claims one item: an atomic compare-and-set, todo ∧ unowned ∧ every dependency done →
   * in-progress, owned by the calling session (`POST /v1/todos/{id}/claim`; seed 000 "Claiming").
   * Errors: `AlreadyClaimed` (you lost the race), `DependencyBlocked` (`blockedBy`),
   * `ReservedForAssignee`, `ClaimRequiresSession` (a user token), `NotFound`.
   */
  async claim(id: string): Promise<TodoItem> {
    const r = await this.t.unwrap('POST /v1/todos/{id}/claim', this.t.api.POST('/v1/todos/{id}/claim', { params: { path: { id } } }));
    return r.item;
  }

  /** The seed's alias of `claim` (`gr todo start`). */
  start(id: string): Promise<TodoItem> {
    return this.claim(id);
  }

  /**
   * `claim`, but the ordinary "not eligible" answers (`AlreadyClaimed`, `DependencyBlocked`,
   * `ReservedForAssignee`) come back as `{claimed:false, reason}` instead of being thrown, like
   * the seed's `{claimed: bool}`. Every other error is thrown.
   */
  async tryClaim(id: string): Promise<TryClaimResult> {
    try {
      return { claimed: true, item: await this.claim(id) };
    } catch (err) {
      if (err instanceof AlreadyClaimed || err instanceof DependencyBlocked || err instanceof ReservedForAssignee) return { claimed: false, reason: err };
      throw err;
    }
  }

  /**
   * Claims the first ready item of a scope in (priority desc, position, id) order that is not
   * reserved for someone else and that the filters admit (`POST /v1/todos/next`; seed 000
   * `gr todo next`, filters and waiting are Coord's additions): `tags` (carries every one), `anyTags`
   * (at least one), `minPriority`, `assignedToMe`. With `waitMs` (≤ 60000) the server holds the
   * call until an eligible item appears or the time runs out. `{claimed:false}` when nothing is
   * eligible. Errors: `ClaimRequiresSession`, `InvalidRequest` (no_session_context, invalid_scope,
   * invalid_next_filter), `Forbidden`, `NotFound`, `Unauthorized` (the session stopped while waiting).
   */
  async next(opts: NextInput = {}, init: { signal?: AbortSignal } = {}): Promise<ClaimResult> {
    const body = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) as NextInput;
    return this.t.unwrap('POST /v1/todos/next', this.t.api.POST('/v1/todos/next', { body, signal: init.signal }));
  }

  /**
   * Claims (an id, or the next item a `NextInput` admits, waiting with `waitMs`), heartbeats the
   * claim while `fn(item, {signal})` runs, then completes it with `fn`'s value as its result, or
   * blocks it with the error's message when `fn` throws (and rethrows). `signal` aborts when a
   * heartbeat finds the claim lost. `{claimed:false}` when `next` found nothing. See work.ts.
   */
  withClaim<T>(target: string | NextInput, fn: (item: TodoItem, ctx: ClaimContext) => Promise<T>, opts?: WithClaimOptions<T>): Promise<WithClaimResult<T>> {
    return withClaim(this, target, fn, opts);
  }

  /** Claims as they come: waiting `next` calls in a row, each claimed item yielded (you finish it). Ends on `signal` or after `max`. */
  claims(opts?: ClaimLoopOptions): AsyncGenerator<TodoItem> {
    return claims(this, opts);
  }

  /**
   * A worker loop: every item claimed by waiting `next` goes through `withClaim` (done with
   * `fn`'s result, or blocked with its error). Resolves `{done, blocked}` when `signal` aborts
   * or after `max` claims.
   */
  work<T>(fn: (item: TodoItem, ctx: ClaimContext) => Promise<T>, opts?: ClaimLoopOptions & WithClaimOptions<T>): Promise<WorkSummary> {
    return work(this, fn, opts);
  }

  /**
   * in-progress or blocked → done (`POST /v1/todos/{id}/done`); dependents whose last dependency
   * this was become ready in the same transaction. Owner, override authority or a user.
   * `opts.result` (a string or any JSON value; null or absent: none) is stored with the item, sent
   * in the `done` event and read by dependents (`dependencyResults`); at most `[todo] max_result` bytes
   * (default 16384) as UTF-8 JSON. Reopening clears it. An object's key order is not kept (jsonb).
   * Errors: `InvalidTransition` (e.g. not claimed yet), `LeaseExpired`, `InvalidRequest`
   * (result_too_large, with `limit`), `Forbidden`, `NotFound`.
   */
  async done(id: string, opts?: Omit<DoneTodoInput, 'next'>): Promise<TodoItem>;
  /**
   * `done`, then `next` in the same request (one round trip per claim cycle): `opts.next` takes
   * what `next` takes (`{}`: your scope, no filters; `waitMs` allowed; `init.signal` ends a wait).
   * Means exactly a `done` followed by a `next`; an invalid `next` (e.g. `NotFound` for its scope)
   * refuses the whole call before anything is completed. Resolves `{item, next}` (`next` as `next`
   * answers it; `{claimed:false}` also when the claim could not be made after the completion).
   * Aborting with `init.signal` while it waits throws `ConnectionFailed`, but the `done` has already
   * committed: read the item to know. Errors: those of `done` and of `next`.
   */
  async done(id: string, opts: DoneTodoInput & { next: NextInput }, init?: { signal?: AbortSignal }): Promise<DoneResult>;
  async done(id: string, opts: DoneTodoInput = {}, init: { signal?: AbortSignal } = {}): Promise<TodoItem | DoneResult> {
    const body: DoneTodoInput = opts.result === undefined ? {} : { result: opts.result };
    if (opts.next) body.next = Object.fromEntries(Object.entries(opts.next).filter(([, v]) => v !== undefined)) as NextInput;
    const r = await this.t.unwrap('POST /v1/todos/{id}/done', this.t.api.POST('/v1/todos/{id}/done', { params: { path: { id } }, body, signal: init.signal }));
    return opts.next ? { item: r.item, next: r.next ?? { claimed: false } } : r.item;
  }

  /**
   * The item's dependencies, each `{id, title, status, result?}` in sorted id order
   * (`GET /v1/todos/{id}/dependencies`): what a dependent needs from upstream in one call.
   * Anyone who may read the item may call it. Errors: `NotFound` (todo_not_found, also for items outside your scopes).
   */
  async dependencyResults(id: string): Promise<DependencyResults> {
    return this.t.unwrap('GET /v1/todos/{id}/dependencies', this.t.api.GET('/v1/todos/{id}/dependencies', { params: { path: { id } } }));
  }

  /**
   * in-progress → blocked (`POST /v1/todos/{id}/block`); a non-empty `note` replaces the note.
   * Errors: `InvalidTransition`, `LeaseExpired`, `InvalidRequest` (note_too_long), `Forbidden`, `NotFound`.
   */
  async block(id: string, note?: string): Promise<TodoItem> {
    const r = await this.t.unwrap(
      'POST /v1/todos/{id}/block',
      this.t.api.POST('/v1/todos/{id}/block', { params: { path: { id } }, body: note === undefined ? {} : { note } }),
    );
    return r.item;
  }

  /**
   * in-progress, blocked or done → todo, owner cleared (`POST /v1/todos/{id}/reopen`); reopening a
   * done item re-blocks its ready dependents. Errors: `InvalidTransition`, `Forbidden`, `NotFound`.
   */
  async reopen(id: string): Promise<TodoItem> {
    const r = await this.t.unwrap('POST /v1/todos/{id}/reopen', this.t.api.POST('/v1/todos/{id}/reopen', { params: { path: { id } }, body: {} }));
    return r.item;
  }

  /**
   * Extends the caller's claim lease to now + claim_lease (database clock; `POST /v1/todos/{id}/heartbeat`).
   * Owner only; no revision bump, no event. Errors: `LeaseExpired` (too late: claim again),
   * `InvalidTransition` (not in progress), `Forbidden`, `NotFound`.
   */
  async heartbeat(id: string): Promise<TodoItem> {
    const r = await this.t.unwrap('POST /v1/todos/{id}/heartbeat', this.t.api.POST('/v1/todos/{id}/heartbeat', { params: { path: { id } } }));
    return r.item;
  }

  /**
   * Exports a whole scope (`GET /v1/scopes/{scope}/export`; seed 000 `gr todo export`), streamed
   * by the server page by page so it is never cut at list_limit. `markdown` (default): the seed's
   * `# Todo export: <scope>` document; `json`: every item, as `list` returns them.
   * Errors: `InvalidRequest` (invalid_scope), `NotFound` (scope_not_found, also for a scope the caller is not in).
   */
  async export(scope: string, format?: 'markdown'): Promise<string>;
  async export(scope: string, format: 'json'): Promise<TodoItem[]>;
  async export(scope: string, format: 'markdown' | 'json' = 'markdown'): Promise<string | TodoItem[]> {
    const label = 'GET /v1/scopes/{scope}/export';
    const params = { path: { scope }, query: { format } };
    if (format === 'json') return (await this.t.unwrap(label, this.t.api.GET('/v1/scopes/{scope}/export', { params }))) as TodoItem[];
    return (await this.t.unwrap(label, this.t.api.GET('/v1/scopes/{scope}/export', { params, parseAs: 'text' }))) as unknown as string;
  }

  /**
   * Assigns the item to a session, or unassigns it with `null` (`PUT /v1/todos/{id}/assignee`;
   * seed 000 `gr todo assign`). Override authority or a user. Errors: `Forbidden`, `RevisionMismatch`, `NotFound`.
   */
  async assign(id: string, assignee: string | null, opts?: IfMatch): Promise<TodoItem> {
    const r = await this.t.unwrap(
      'PUT /v1/todos/{id}/assignee',
      this.t.api.PUT('/v1/todos/{id}/assignee', { params: { path: { id }, header: ifMatchHeader(opts) }, body: { assignee } }),
    );
    return r.item;
  }
}
