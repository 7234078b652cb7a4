import { z } from 'zod';
import { LIST_LIMIT_CEILING } from '../config.js';
import { compiledResponse } from '../http/serialize.js';

export const TodoStatus = z.enum(['todo', 'in-progress', 'done', 'blocked']).meta({ id: 'TodoStatus' });

export const TodoItem = z
  .object({
    id: z.string().describe('`td-` + 16 hex'),
    scope: z.string().describe('`session:<root>`, `scenario:<id>` or `graph:<id>`'),
    title: z.string(),
    note: z.string().optional(),
    status: TodoStatus.describe(
      'Effective status: a stored todo with an unfinished dependency reads `blocked` (ownerless, with `blockedBy`); a claim whose lease expired reads `todo` (or `blocked`) with no owner from its deadline on, since `claim` and `next` take it over',
    ),
    ready: z
      .boolean()
      .describe('Claimable now: stored todo and unowned, or a claim whose lease expired (`leaseExpired`), with every dependency done: the claim predicate'),
    owner: z.string().optional().describe('The session that claimed it'),
    assignee: z.string().optional().describe('The session it is reserved for'),
    parentId: z.string().optional(),
    tags: z.array(z.string()),
    dependsOn: z.array(z.string()).describe('Every dependency id, sorted'),
    blockedBy: z.array(z.string()).describe('The unfinished dependencies, sorted'),
    whyBlocked: z.string().optional().describe('The seed’s WHY BLOCKED text: `dependencies: a,b` and the block note'),
    revision: z.number().int().describe('Bumped by every mutation; also the ETag'),
    position: z.number().int(),
    priority: z.number().int().describe('Higher is claimed first by `next`, then (position, id); default 0'),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    leaseExpiresAt: z.string().optional().describe('Claimed items: last progress + claim_lease (database clock)'),
    leaseExpired: z
      .boolean()
      .optional()
      .describe(
        'True from the lease deadline on: the claim is free (it reads `todo` without owner), the former owner gets 409 lease_expired and may claim it again like anyone else (a `graph:` or `metagit:` item is never taken over: its contract records the dispatch interrupted)',
      ),
    result: z
      .unknown()
      .optional()
      .describe(
        'What `done` handed on (`POST /v1/todos/{id}/done` with `result`): a string or any JSON value. Present only while the item is done with a result; reopening clears it',
      ),
  })
  .meta({ id: 'TodoItem' });

/** One item: the answer of claim, done, block, reopen, heartbeat and get (a compiled serialiser: a hot route, src/http/serialize.ts). */
export const ItemEnvelope = compiledResponse(z.object({ item: TodoItem }));

/** An item's priority: a small integer, higher first (the seed has none, so 0 keeps its order). */
export const Priority = z.number().int().min(-32768).max(32767);

export const AddTodoBody = z
  .strictObject({
    title: z.string().max(4096).describe('Trimmed; 1..max_title bytes (default 500)'),
    note: z.string().max(16384).optional().describe('≤ max_note bytes (default 2000); not trimmed'),
    tags: z.array(z.string().max(200)).max(100).optional().describe('Trimmed, de-duplicated, sorted'),
    parentId: z.string().max(100).optional().describe('Makes this a sub-item (one level deep, same scope)'),
    assignee: z
      .string()
      .max(100)
      .optional()
      .describe('Reserve for a session that may claim in the scope (else 422 invalid_assignee); another session than yourself needs override authority'),
    dependsOn: z.array(z.string().max(100)).max(1000).optional().describe('Dependency ids in the same scope; duplicates fold'),
    scope: z.string().max(300).optional().describe('Default: the caller’s subtree root scope'),
    priority: Priority.optional().describe('−32768..32767, higher is claimed first by `next`; default 0'),
  })
  .meta({ id: 'AddTodo' });

/**
 * One item of `POST /v1/todos/bulk`: every field of a single add (`AddTodo`, so a field added
 * there reaches the bulk add too) except `scope`, which is the request's, plus `ref` and `parentRef`.
 */
export const AddManyTodoItem = AddTodoBody.omit({ scope: true })
  .extend({
    ref: z
      .string()
      .max(100)
      .optional()
      .describe(
        'A name for this item, unique within the request, that `parentRef` and `dependsOn` of the other items can use; must not start with `td-` (that prefix marks an existing item id) nor begin or end with whitespace',
      ),
    parentRef: z
      .string()
      .max(100)
      .optional()
      .describe('Makes this a sub-item of the item of this request with that `ref` (instead of `parentId`; one level deep)'),
    dependsOn: AddTodoBody.shape.dependsOn.describe(
      'Each entry is an existing item id (`td-…`, same scope) or the `ref` of another item of this request; duplicates fold',
    ),
  })
  .meta({ id: 'AddManyTodoItem' });

export const AddManyTodosBody = z
  .strictObject({
    scope: AddTodoBody.shape.scope,
    items: z
      .array(AddManyTodoItem)
      .max(LIST_LIMIT_CEILING)
      .describe('At most `list_limit` items (default 2000; more is 422 too_many_items), added in this order'),
  })
  .meta({ id: 'AddManyTodos' });

export const AddManyTodosResult = z
  .object({
    items: z.array(TodoItem).describe('The new items, in request order'),
    refs: z.record(z.string(), z.string()).describe('Each `ref` of the request → the id of its item'),
  })
  .meta({ id: 'AddManyTodosResult' });

export const EditTodoBody = z
  .strictObject({
    title: z.string().max(4096).optional(),
    note: z.string().max(16384).optional().describe('`""` clears the note'),
    tags: z.array(z.string().max(200)).max(100).optional(),
    position: z.number().int().min(0).max(2_000_000_000).optional(),
    priority: Priority.optional().describe('−32768..32767, higher is claimed first by `next`'),
    dependsOn: z.array(z.string().max(100)).max(1000).optional().describe('Absent = unchanged; `[]` clears'),
  })
  .meta({ id: 'EditTodo' });

export const ListTodosQuery = z.strictObject({
  scope: z.string().max(300).optional(),
  status: TodoStatus.optional().describe('Effective status: `todo` = ready only; `blocked` = manual blocks plus dependency waiting'),
  tag: z.string().max(200).optional(),
  owner: z.string().max(100).optional().describe('A session id, or `me`'),
  assignee: z.string().max(100).optional(),
  all: z.enum(['true', 'false']).optional().describe('Every scope (users and orchestrator sessions only)'),
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size, capped at list_limit'),
  cursor: z.string().max(2000).optional().describe('`nextCursor` of the previous page'),
});

export const TodoList = z.object({ items: z.array(TodoItem), nextCursor: z.string().nullable() }).meta({ id: 'TodoList' });

/** The answer of `next` (a compiled serialiser: the hottest route, src/http/serialize.ts). */
export const ClaimResult = compiledResponse(
  z
    .object({
      claimed: z.boolean(),
      item: TodoItem.optional(),
      dispatch: z
        .looseObject({})
        .optional()
        .describe('Scope `graph:<id>` only: the Task Graph dispatch record (`TaskGraphDispatch`: session token, worktree, base)'),
      reason: z.string().optional().describe('Scope `graph:<id>` only, `claimed:false`: why nothing could be claimed'),
    })
    .meta({ id: 'ClaimResult', description: '`{claimed:false}` when nothing is eligible: not an error' }),
);

/** The longest a waiting `next` may hold its request (ms). */
export const MAX_NEXT_WAIT_MS = 60_000;

export const NextBody = z
  .strictObject({
    scope: z.string().max(300).optional().describe('Default: the caller’s subtree root scope'),
    tags: z.array(z.string().max(200)).max(100).optional().describe('Only items with every one of these tags'),
    anyTags: z.array(z.string().max(200)).max(100).optional().describe('Only items with at least one of these tags'),
    minPriority: Priority.optional().describe('Only items with priority ≥ this'),
    assignedToMe: z.boolean().optional().describe('Only items assigned to the caller'),
    waitMs: z.number().int().min(0).max(MAX_NEXT_WAIT_MS).optional().describe('Wait up to this many ms for an eligible item; 0 = answer at once'),
  })
  .meta({ id: 'NextRequest' });

export const IdParams = z.object({ id: z.string().max(100) });

export const IfMatchHeaders = z.looseObject({
  'if-match': z.string().max(40).optional().describe('The revision you read (ETag), quoted or not; 412 when it moved on'),
});

export const Readiness = z
  .object({
    id: z.string(),
    ready: z.boolean().describe('The claim predicate: stored todo, unowned, every dependency done'),
    claimable: z.boolean().describe('Ready, not reserved for another assignee, and the caller is a session'),
    status: TodoStatus,
    reasons: z.array(z.object({ code: z.string(), message: z.string(), ids: z.array(z.string()).optional() })),
  })
  .meta({ id: 'Readiness' });

/**
 * The body of `POST /v1/todos/{id}/done`: an optional result for the item's dependents.
 * `null` is the same as no result. Its size is checked by the service (`[todo] max_result`).
 */
export const DoneTodoBody = z
  .strictObject({
    result: z
      .unknown()
      .optional()
      .describe(
        'What this item hands on to its dependents: a string (stored as a JSON string) or any JSON value; `null` or absent: none. ' +
          'At most `[todo] max_result` bytes (default 16384) of its UTF-8 JSON serialisation (a string’s quotes and escapes count), else 422 result_too_large',
      ),
    next: NextBody.optional().describe(
      'Claim the next item in the same request, after the completion: what `POST /v1/todos/next` takes (`{}` for the caller’s scope without filters; ' +
        '`waitMs` allowed). Means exactly a `done` followed by a `next` of the same session; the `next` is checked before the `done`, so an invalid one ' +
        'refuses the whole request and completes nothing. The answer then carries `next`.',
    ),
  })
  .meta({ id: 'DoneTodo' });

/** The answer of `POST /v1/todos/{id}/done`: the completed item, and with a `next` in the request, what it claimed. */
export const DoneResult = compiledResponse(
  z
    .object({
      item: TodoItem,
      next: ClaimResult.optional().describe('Present when the request asked for `next`: the claim made after the completion'),
    })
    .meta({ id: 'DoneResult' }),
);

/** One dependency as `GET /v1/todos/{id}/dependencies` reads it. */
export const DependencyResult = z
  .object({
    id: z.string(),
    title: z.string(),
    status: TodoStatus.describe('Effective status, as the item reads'),
    result: z.unknown().optional().describe('The dependency’s `done` result, when it is done with one'),
  })
  .meta({ id: 'DependencyResult' });

export const DependencyResults = z
  .object({
    id: z.string().describe('The item whose dependencies these are'),
    dependencies: z.array(DependencyResult).describe('Every dependency, in sorted id order'),
  })
  .meta({ id: 'DependencyResults' });
