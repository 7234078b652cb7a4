import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import type { EventHub } from '../events/events.hub.js';
import { DomainError, fail } from '../http/errors.js';
import { problemResponses } from '../http/problem.js';
import { addTodo } from './todos.add.js';
import { assignTodo, editTodo, removeTodo } from './todos.edit.js';
import { claimNextChecked, claimTodo, nextTarget, type NextInput, type NextTarget } from './todos.claim.js';
import { dependencyResults } from './todos.dependencies.js';
import { getTodo, listTodos, readiness } from './todos.read.js';
import { heartbeatTodo, transitionTodo } from './todos.transitions.js';
import type { Ctx } from './todos.context.js';
import { addManyTodos } from './todos.bulk.js';
import {
  AddManyTodosBody,
  AddManyTodosResult,
  AddTodoBody,
  ClaimResult,
  DependencyResults,
  DoneTodoBody,
  EditTodoBody,
  IdParams,
  IfMatchHeaders,
  DoneResult,
  ItemEnvelope,
  ListTodosQuery,
  NextBody,
  Readiness,
  TodoList,
} from './todos.schemas.js';
import type { TodoItem } from './todos.view.js';
import { Waiters, waitForNextIn } from './todos.wait.js';
import { answerWroteNothing } from '../idempotency/idempotency.plugin.js';

/** `If-Match: "7"` / `7` / `W/"7"` → 7; `*` or absent → undefined. */
export function parseIfMatch(h: string | undefined): number | undefined {
  if (h === undefined || h.trim() === '*') return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,10})"?\s*$/.exec(h);
  if (!m) fail('validation_failed', `If-Match must be a revision such as "3" (got ${h})`);
  return Number(m[1]);
}

function withEtag(reply: FastifyReply, item: TodoItem) {
  reply.header('etag', `"${item.revision}"`);
  return { item };
}

const tags = ['todos'];

/**
 * Todo routes (docs/architecture.md §D7). Each handler parses, calls one service function and maps the
 * result; the rules live in the use-case files (todos.add.ts, todos.read.ts, todos.claim.ts,
 * todos.transitions.ts, todos.edit.ts) and the statements in todos.repo.ts.
 */
export function todosRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config; hub: EventHub; seen?: (sessionId: string) => void }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const ctx = (req: { principal: Ctx['principal'] }): Ctx => ({ sql: deps.sql, config: deps.config, principal: req.principal });
  const itemErrors = ['todo_not_found', 'forbidden'] as const;

  r.post(
    '/v1/todos',
    {
      schema: {
        tags,
        operationId: 'todosAdd',
        summary: 'Add an item',
        description: 'Adds an item to a scope (default: the caller’s subtree root). Seed 000 “Items”, “Dependencies”.',
        body: AddTodoBody,
        response: {
          201: ItemEnvelope,
          ...problemResponses(
            'no_session_context',
            'invalid_scope',
            'forbidden',
            'scope_not_found',
            'payload_too_large',
            'malformed_json',
            'managed_by_graph',
            'title_required',
            'title_too_long',
            'note_too_long',
            'parent_not_found',
            'hierarchy_too_deep',
            'parent_scope_mismatch',
            'dependency_empty',
            'dependency_not_found',
            'dependency_scope_mismatch',
            'invalid_assignee',
          ),
        },
      },
    },
    async (req, reply) => {
      const item = await addTodo(ctx(req), req.body);
      reply.status(201);
      return withEtag(reply, item);
    },
  );

  r.post(
    '/v1/todos/bulk',
    {
      schema: {
        tags,
        operationId: 'todosAddMany',
        summary: 'Add many items at once',
        description:
          'Adds up to `list_limit` items to one scope in one transaction, all or nothing, with every rule of a single add. ' +
          'Items name each other by `ref`: `parentRef`, and `dependsOn` entries that do not start with `td-` (those are existing item ids). ' +
          'Positions and `added` events follow request order. A refusal caused by one item names it (`index`, `ref`) beside the single add’s code; ' +
          'a cycle among the new items is `dependency_cycle` with `cycle` as refs. Bodies over `COORD_BODY_LIMIT` (default 1 MiB) are 413.',
        body: AddManyTodosBody,
        response: {
          201: AddManyTodosResult,
          ...problemResponses(
            'no_session_context',
            'invalid_scope',
            'forbidden',
            'scope_not_found',
            'payload_too_large',
            'malformed_json',
            'managed_by_graph',
            'too_many_items',
            'invalid_ref',
            'duplicate_ref',
            'unknown_ref',
            'title_required',
            'title_too_long',
            'note_too_long',
            'parent_not_found',
            'hierarchy_too_deep',
            'parent_scope_mismatch',
            'dependency_empty',
            'dependency_self',
            'dependency_not_found',
            'dependency_scope_mismatch',
            'dependency_cycle',
            'invalid_assignee',
          ),
        },
      },
    },
    async (req, reply) => {
      const result = await addManyTodos(ctx(req), req.body);
      reply.status(201);
      return result;
    },
  );

  r.get(
    '/v1/todos',
    {
      schema: {
        tags,
        operationId: 'todosList',
        summary: 'List items',
        description: 'Position order, keyset-paginated (`nextCursor`), never silently truncated. Filters act on the effective status.',
        querystring: ListTodosQuery,
        response: { 200: TodoList, ...problemResponses('no_session_context', 'invalid_scope', 'invalid_cursor', 'forbidden', 'scope_not_found') },
      },
    },
    async (req) => listTodos(ctx(req), { ...req.query, all: req.query.all === 'true' }),
  );

  r.get(
    '/v1/todos/:id',
    {
      schema: { tags, operationId: 'todosGet', summary: 'Get an item', params: IdParams, response: { 200: ItemEnvelope, ...problemResponses(...itemErrors) } },
    },
    async (req, reply) => withEtag(reply, await getTodo(ctx(req), req.params.id)),
  );

  r.get(
    '/v1/todos/:id/readiness',
    {
      schema: {
        tags,
        operationId: 'todosReadiness',
        summary: 'Why is this item not ready?',
        description:
          'Answers with the same predicate the claim uses: stored status, owner, unfinished dependencies, block note, reservation; and `assignee_gone` when the item is reserved for a session that is stopped or deleted (only the list’s override authority may claim it until it is reassigned).',
        params: IdParams,
        response: { 200: Readiness, ...problemResponses(...itemErrors) },
      },
    },
    async (req) => readiness(ctx(req), req.params.id),
  );

  r.patch(
    '/v1/todos/:id',
    {
      schema: {
        tags,
        operationId: 'todosEdit',
        summary: 'Edit an item',
        description: 'Title, note, tags, position, priority and/or dependencies in one revision; `If-Match` guards against lost updates.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: EditTodoBody,
        response: {
          200: ItemEnvelope,
          ...problemResponses(
            ...itemErrors,
            'managed_by_graph',
            'revision_mismatch',
            'lease_expired',
            'title_required',
            'title_too_long',
            'note_too_long',
            'dependency_empty',
            'dependency_self',
            'dependency_not_found',
            'dependency_scope_mismatch',
            'dependency_cycle',
          ),
        },
      },
    },
    async (req, reply) => withEtag(reply, await editTodo(ctx(req), req.params.id, req.body, parseIfMatch(req.headers['if-match']))),
  );

  r.get(
    '/v1/todos/:id/dependencies',
    {
      schema: {
        tags,
        operationId: 'todosDependencyResults',
        summary: 'Read an item’s dependencies and their results',
        description:
          'Each dependency as `{id, title, status, result?}` in sorted id order: what a dependent needs from upstream in one call, ' +
          'the `result` each one’s `done` stored. Anyone who may read the item may call it (dependencies share its scope).',
        params: IdParams,
        response: { 200: DependencyResults, ...problemResponses(...itemErrors) },
      },
    },
    async (req) => dependencyResults(ctx(req), req.params.id),
  );

  r.put(
    '/v1/todos/:id/dependencies',
    {
      schema: {
        tags,
        operationId: 'todosSetDependencies',
        summary: 'Replace an item’s dependency set',
        description: '`[]` clears. Ids are trimmed, duplicates fold, then self/unknown/scope/cycle are checked per id in sorted order.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: z.strictObject({ dependsOn: z.array(z.string().max(100)).max(1000) }),
        response: {
          200: ItemEnvelope,
          ...problemResponses(
            ...itemErrors,
            'managed_by_graph',
            'revision_mismatch',
            'lease_expired',
            'dependency_empty',
            'dependency_self',
            'dependency_not_found',
            'dependency_scope_mismatch',
            'dependency_cycle',
          ),
        },
      },
    },
    async (req, reply) => withEtag(reply, await editTodo(ctx(req), req.params.id, { dependsOn: req.body.dependsOn }, parseIfMatch(req.headers['if-match']))),
  );

  r.delete(
    '/v1/todos/:id',
    {
      schema: {
        tags,
        operationId: 'todosRemove',
        summary: 'Remove an item and its sub-items',
        params: IdParams,
        response: { 200: z.object({ removed: z.array(z.string()) }), ...problemResponses(...itemErrors, 'todo_referenced', 'managed_by_graph') },
      },
    },
    async (req) => removeTodo(ctx(req), req.params.id),
  );

  r.post(
    '/v1/todos/:id/claim',
    {
      schema: {
        tags,
        operationId: 'todosClaim',
        summary: 'Claim an item (atomic compare-and-set)',
        description: 'todo ∧ unowned ∧ every dependency done → in-progress, owned by the calling session. Alias: `start`.',
        params: IdParams,
        response: {
          200: ItemEnvelope,
          ...problemResponses(...itemErrors, 'claim_requires_session', 'reserved_for_assignee', 'already_claimed', 'dependency_blocked', 'managed_by_graph'),
        },
      },
    },
    async (req, reply) => withEtag(reply, await claimTodo(ctx(req), req.params.id)),
  );

  const waiters = new Waiters(deps.hub, deps.sql);
  app.addHook('preClose', async () => waiters.closeAll());
  r.post(
    '/v1/todos/next',
    {
      schema: {
        tags,
        operationId: 'todosNext',
        summary: 'Claim the next eligible item in a scope',
        description:
          'The first ready item in (priority desc, position, id) order, not reserved for someone else, among those the filters admit ' +
          '(`tags`: carries every one; `anyTags`: at least one; `minPriority`; `assignedToMe`). `{claimed:false}` when none. ' +
          'With `waitMs` (≤ 60000) the request is held until an eligible item appears or the time runs out (woken by the scope’s events, ' +
          'never two waiters for one item; a client that disconnects claims nothing). Seed 000 `next`; the filters and the waiting are Coord’s additions.',
        body: NextBody.nullish(),
        response: {
          200: ClaimResult,
          ...problemResponses('claim_requires_session', 'no_session_context', 'invalid_scope', 'forbidden', 'scope_not_found', 'invalid_next_filter'),
        },
      },
    },
    async (req, reply) => {
      const { waitMs = 0, ...input } = req.body ?? {};
      const r = await claimFor(req, reply, await nextTarget(ctx(req), input), waitMs);
      // Nothing claimed is nothing done: a retry with the same Idempotency-Key runs again.
      if (!r.claimed) answerWroteNothing(req);
      return r;
    },
  );

  /**
   * One checked `next` for the request: at once, or held up to `waitMs` (the client closing its
   * connection ends the wait; a waiting session counts as seen). Shared by `next` and `done` with `next`.
   */
  async function claimFor(req: FastifyRequest, reply: FastifyReply, target: NextTarget, waitMs: number) {
    if (waitMs <= 0) return claimNextChecked(ctx(req), target);
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    // A waiting session is alive: it counts as seen while it waits (heartbeat intervals).
    const seen = req.principal.kind === 'session' ? setInterval(() => deps.seen?.(req.principal.id), 1000) : undefined;
    try {
      return await waitForNextIn(ctx(req), { hub: deps.hub, waiters }, target, waitMs, gone.signal);
    } finally {
      clearInterval(seen);
      if (req.principal.kind === 'session') deps.seen?.(req.principal.id);
    }
  }

  const transitions = [
    [
      'done',
      'done',
      'Complete a claimed or blocked item',
      'From in-progress or blocked; cascades to dependents in the same transaction. An optional `result` (a string or any JSON value, ' +
        '≤ max_result bytes as JSON) is stored with the item, sent in the `done` event and read by dependents (`GET /v1/todos/{id}/dependencies`). ' +
        'With `next` (what `POST /v1/todos/next` takes), the same request then claims the next item, one round trip per claim cycle: ' +
        'exactly a `done` followed by a `next` of the same session, the answer carrying `next`.',
    ],
    ['block', 'blocked', 'Block a claimed item', 'From in-progress; an optional note replaces the note.'],
    [
      'reopen',
      'todo',
      'Reopen an item',
      'From in-progress, blocked or done; clears the owner and a done item’s result; reopening a done item re-blocks its ready dependents.',
    ],
  ] as const;
  for (const [path, to, summary, description] of transitions) {
    r.post(
      `/v1/todos/:id/${path}`,
      {
        schema: {
          tags,
          operationId: `todos${path[0].toUpperCase()}${path.slice(1)}`,
          summary,
          description,
          params: IdParams,
          body: (to === 'blocked' ? z.strictObject({ note: z.string().max(16384).optional() }) : to === 'done' ? DoneTodoBody : z.strictObject({})).nullish(),
          response: {
            200: to === 'done' ? DoneResult : ItemEnvelope,
            ...problemResponses(
              ...itemErrors,
              'invalid_transition',
              'lease_expired',
              'note_too_long',
              'managed_by_graph',
              ...(to === 'done'
                ? ([
                    'result_too_large',
                    'claim_requires_session',
                    'no_session_context',
                    'invalid_scope',
                    'forbidden',
                    'scope_not_found',
                    'invalid_next_filter',
                  ] as const)
                : []),
            ),
          },
        },
      },
      async (req, reply) => {
        const body = req.body as { note?: string; result?: unknown; next?: NextInput & { waitMs?: number } } | undefined | null;
        if (!body?.next) return withEtag(reply, await transitionTodo(ctx(req), req.params.id, to, body?.note, body?.result));
        // `done` then `next` (one round trip per claim cycle): the `next` is checked first, so a
        // bad one refuses the request before anything is completed.
        const { waitMs = 0, ...input } = body.next;
        const target = await nextTarget(ctx(req), input);
        const done = withEtag(reply, await transitionTodo(ctx(req), req.params.id, to, undefined, body.result));
        // The completion has committed: the answer says so even when the claim then fails (the
        // session stopped while it waited), as `next: {claimed:false}`; the next call says why.
        const next = await claimFor(req, reply, target, waitMs).catch((err: unknown) => {
          if (err instanceof DomainError) return { claimed: false };
          throw err;
        });
        return { ...done, next };
      },
    );
  }

  r.post(
    '/v1/todos/:id/heartbeat',
    {
      schema: {
        tags,
        operationId: 'todosHeartbeat',
        summary: 'Extend the caller’s claim lease',
        description: 'Owner only. Moves `leaseExpiresAt` to now + claim_lease. No revision bump, no event.',
        params: IdParams,
        response: { 200: ItemEnvelope, ...problemResponses(...itemErrors, 'lease_expired', 'invalid_transition') },
      },
    },
    async (req, reply) => withEtag(reply, await heartbeatTodo(ctx(req), req.params.id)),
  );

  r.put(
    '/v1/todos/:id/assignee',
    {
      schema: {
        tags,
        operationId: 'todosAssign',
        summary: 'Assign or unassign an item',
        description:
          'Override authority (subtree root, scenario orchestrator) or a user. The assignee must be an active session that may claim in the item’s scope ' +
          '(else 422 invalid_assignee, the same for a missing session and another team’s); `null` unassigns.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: z.strictObject({ assignee: z.string().max(100).nullable() }),
        response: { 200: ItemEnvelope, ...problemResponses(...itemErrors, 'revision_mismatch', 'managed_by_graph', 'invalid_assignee') },
      },
    },
    async (req, reply) => withEtag(reply, await assignTodo(ctx(req), req.params.id, req.body.assignee, parseIfMatch(req.headers['if-match']))),
  );
}
