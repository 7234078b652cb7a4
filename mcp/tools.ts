/**
 * Coord's operations as MCP tools. One tool
 * set, two transports: every API tool is a route of the public API — its input schema is the
 * route's own parameters and body schema, taken from the OpenAPI document the routes generate, and
 * calling it calls the route (through `app.inject` on the server's `/mcp`, over HTTP in `coord mcp`).
 * So the validation, the authority rules and the errors are the routes', with no rule restated
 * here. The runner's tools (stdio only) call the runner the CLI uses.
 *
 * Results. Success: `structuredContent: {result}` (the route's JSON). A domain failure (a problem
 * document: 404, 409 already_claimed, TASK_GRAPH_INVALID with its stage, …) is a result with
 * `isError: true` and `structuredContent: {error: {code, status, message, recoverable, stage?,
 * details?, next}}`: what happened and the legitimate next step. Protocol errors are for protocol
 * faults only (an unknown tool).
 *
 * Names. Seed 002 names its tools `coordinate_agents_task_graph_*`; those keep their names. Coord's
 * own tools are `<set>_<verb>`; seed 001's are `metagit_task_*`. Sets (`todo`, `scenario`, `events`,
 * `graph`, `graph-runner` for a runner's coordinator calls, `metagit`) let a client load only what it
 * needs (`coord mcp --tools todo,graph`).
 */

export type ToolSet = 'todo' | 'scenario' | 'events' | 'graph' | 'graph-runner' | 'metagit';
export const TOOL_SETS: readonly ToolSet[] = ['todo', 'scenario', 'events', 'graph', 'graph-runner', 'metagit'];
/** The sets a client gets without choosing. */
export const DEFAULT_TOOL_SETS: readonly ToolSet[] = ['todo', 'events', 'graph'];

/** One API tool: a route of the public API. */
export interface ApiTool {
  name: string;
  set: ToolSet;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The route path as the OpenAPI document names it (`/v1/todos/{id}`). */
  path: string;
  description: string;
  /** Path parameter → tool argument name (default: the same name). */
  rename?: Record<string, string>;
  /** The body has the same schema as this tool's: described by reference, to keep the tool list small. */
  bodyLike?: string;
  readOnly?: boolean;
}

const t = (name: string, set: ToolSet, method: ApiTool['method'], path: string, description: string, extra: Partial<ApiTool> = {}): ApiTool => ({
  name,
  set,
  method,
  path,
  description,
  ...extra,
});

/** The API tools, in the order `tools/list` returns them. */
export const API_TOOLS: readonly ApiTool[] = [
  t(
    'todo_add',
    'todo',
    'POST',
    '/v1/todos',
    'Add a todo item (to your own list unless scope says otherwise), with optional parentId, tags, dependsOn, assignee.',
  ),
  t(
    'todo_add_many',
    'todo',
    'POST',
    '/v1/todos/bulk',
    'Add many items at once (≤ list_limit, one transaction, all or nothing). Items name each other by ref: parentRef, and dependsOn entries that do not start with td- (those are existing ids). A refusal names the item (index, ref).',
  ),
  t(
    'todo_list',
    'todo',
    'GET',
    '/v1/todos',
    'List items of a scope in position order (paginated: pass nextCursor back as cursor). Filters: status, tag, owner (me), assignee.',
    { readOnly: true },
  ),
  t('todo_get', 'todo', 'GET', '/v1/todos/{id}', 'Read one item.', { readOnly: true }),
  t(
    'todo_next',
    'todo',
    'POST',
    '/v1/todos/next',
    'Claim the next eligible item (highest priority first); {claimed:false} when none. Optional filters; waitMs waits for one instead of polling. In graph:<id>, claims a subtask for your Agent with its dispatch.',
  ),
  t('todo_claim', 'todo', 'POST', '/v1/todos/{id}/claim', 'Claim one item atomically; exactly one of several racing callers wins.'),
  t(
    'todo_done',
    'todo',
    'POST',
    '/v1/todos/{id}/done',
    'Finish a claimed (or blocked) item; dependents become ready. Optional result (text or JSON) is handed on to them. Optional next (the input of todo_next) also claims your next item.',
  ),
  t('todo_block', 'todo', 'POST', '/v1/todos/{id}/block', 'Block a claimed item with an optional note.'),
  t('todo_reopen', 'todo', 'POST', '/v1/todos/{id}/reopen', 'Reopen an item (owner cleared).'),
  t('todo_edit', 'todo', 'PATCH', '/v1/todos/{id}', 'Edit title, note, tags, position or dependsOn in one revision.'),
  t('todo_assign', 'todo', 'PUT', '/v1/todos/{id}/assignee', 'Reserve an item for a session (null clears); override authority only.'),
  t('todo_dependencies', 'todo', 'PUT', '/v1/todos/{id}/dependencies', 'Replace an item’s dependency set ([] clears); cycles are refused.'),
  t('todo_heartbeat', 'todo', 'POST', '/v1/todos/{id}/heartbeat', 'Extend your claim lease on an item you own.'),
  t(
    'todo_session_heartbeat',
    'todo',
    'POST',
    '/v1/sessions/me/heartbeat',
    'Say your session is alive (not an item lease: see todo_heartbeat): an idle session with a heartbeat interval calls it to avoid being auto-stopped; any call counts.',
  ),
  t('todo_why', 'todo', 'GET', '/v1/todos/{id}/readiness', 'Why an item is (not) ready or claimable: the claim predicate spelled out.', { readOnly: true }),
  t(
    'todo_results',
    'todo',
    'GET',
    '/v1/todos/{id}/dependencies',
    'Read an item’s dependencies in one call: id, title, status and the result each one’s done handed on.',
    { readOnly: true },
  ),
  t(
    'scenario_list',
    'scenario',
    'GET',
    '/v1/scenarios',
    'The scenarios you orchestrate or are a member of, in name order, with done/total and completion (paginated: pass nextCursor back as cursor).',
    { readOnly: true },
  ),
  t('scenario_status', 'scenario', 'GET', '/v1/scenarios/{name}/status', 'A scenario’s per-member DONE/TOTAL, RESULT and WAITING ON; whether it is complete.', {
    readOnly: true,
  }),
  t('scenario_result', 'scenario', 'POST', '/v1/scenarios/{name}/members/{member}/result', 'Publish a member’s result (JSON).'),
  t('events_log', 'events', 'GET', '/v1/events/log', 'Events of a topic (todo:<scope>) after a sequence number, oldest first; pass nextAfter back as after.', {
    readOnly: true,
  }),
  t(
    'coordinate_agents_task_graph_validate',
    'graph',
    'POST',
    '/v1/graphs/validate',
    'Validate a Task Graph v1 (and Intent Map) without writing; TASK_GRAPH_INVALID names the stage.',
    {
      readOnly: true,
      bodyLike: 'coordinate_agents_task_graph_create',
    },
  ),
  t(
    'coordinate_agents_task_graph_create',
    'graph',
    'POST',
    '/v1/graphs',
    'Create a Task Graph ({graph, intentMap?}): one work item per subtask, in one transaction.',
  ),
  t('coordinate_agents_task_graph_status', 'graph', 'GET', '/v1/graphs/{id}', 'A graph’s subtasks with derived states, the frontier, recovery[] and records.', {
    readOnly: true,
  }),
  t('coordinate_agents_task_graph_inspect', 'graph', 'GET', '/v1/graphs/{id}/inspect', 'Status plus the newest lifecycle events.', { readOnly: true }),
  t(
    'coordinate_agents_task_graph_plan',
    'graph',
    'GET',
    '/v1/graphs/{id}/plan',
    'Graph Preflight: the next conflict-aware READY wave and a decision per subtask (read-only).',
    { readOnly: true },
  ),
  t(
    'coordinate_agents_task_graph_resume',
    'graph',
    'POST',
    '/v1/graphs/{id}/resume',
    'Clear the recovery gate of a FAILED or STOPPED subtask; dispatch stays explicit.',
  ),
  t(
    'coordinate_agents_task_graph_review',
    'graph',
    'POST',
    '/v1/graphs/{id}/review',
    'Record REVIEW_APPROVED or CHANGES_REQUESTED for the integration you reviewed (fingerprint and aggregate commit); authorises nothing else.',
  ),
  t(
    'graph_claim_wave',
    'graph-runner',
    'POST',
    '/v1/graphs/{id}/run',
    'Coordinator only: claim the planned wave (one dispatch per subtask, session token shown once) without executing it; the runner executes.',
  ),
  t('graph_claim', 'graph', 'POST', '/v1/graphs/{id}/subtasks/{sid}/claim', 'Claim one READY subtask (its dispatch: session token, worktree, base).', {
    rename: { sid: 'subtaskId' },
  }),
  t('graph_heartbeat', 'graph', 'POST', '/v1/graphs/{id}/subtasks/{sid}/heartbeat', 'Extend a running dispatch’s lease.', { rename: { sid: 'subtaskId' } }),
  t(
    'graph_complete',
    'graph',
    'POST',
    '/v1/graphs/{id}/subtasks/{sid}/complete',
    'Report IMPLEMENTATION_DONE evidence (base, commit, changed paths); Scope Audit v1 decides SUCCEEDED or FAILED.',
    { rename: { sid: 'subtaskId' } },
  ),
  t('graph_fail', 'graph', 'POST', '/v1/graphs/{id}/subtasks/{sid}/fail', 'Report a failed dispatch (e.g. AGENT_EXIT_NONZERO with exitCode).', {
    rename: { sid: 'subtaskId' },
  }),
  t(
    'graph_record_recovery',
    'graph-runner',
    'POST',
    '/v1/graphs/{id}/recover',
    'Coordinator only: record stranded dispatches FAILED interrupted (with runner observations).',
  ),
  t(
    'graph_record_stop',
    'graph-runner',
    'POST',
    '/v1/graphs/{id}/stop',
    'Coordinator only: stop the graph or one subtask (their sessions end); the runner removes worktrees.',
  ),
  t('graph_record_cleanup', 'graph-runner', 'POST', '/v1/graphs/{id}/cleanup', 'Coordinator only: record the runner’s cleanup outcomes.'),
  t('metagit_task_create', 'metagit', 'POST', '/v1/task-graphs', 'Create a metagit task graph and its root intent (title, goal, acceptance, graphId?).'),
  t(
    'metagit_task_expand',
    'metagit',
    'POST',
    '/v1/task-graphs/{id}/expand',
    'Add nodes from an indented outline (string) or a list of {title, nodeId? (or node_id), dependsOn? (or depends_on)}; deterministic, all or nothing.',
    { rename: { id: 'graphId' } },
  ),
  t('metagit_task_list', 'metagit', 'GET', '/v1/task-graphs', 'List task graphs (optionally by status).', { readOnly: true }),
  t('metagit_task_graph', 'metagit', 'GET', '/v1/task-graphs/{id}', 'A task graph with every node’s status.', { readOnly: true, rename: { id: 'graphId' } }),
  t('metagit_task_status', 'metagit', 'GET', '/v1/task-graphs/{id}/nodes/{nodeId}', 'One node’s status, dependencies and what it waits on.', {
    readOnly: true,
    rename: { id: 'graphId' },
  }),
  t('metagit_task_ready', 'metagit', 'GET', '/v1/task-graphs/{id}/ready', 'The ready nodes of a graph.', { readOnly: true, rename: { id: 'graphId' } }),
  t('metagit_task_start', 'metagit', 'POST', '/v1/task-graphs/{id}/nodes/{nodeId}/start', 'Start a ready node: a claim owned by you (one winner).', {
    rename: { id: 'graphId' },
  }),
  t('metagit_task_block', 'metagit', 'POST', '/v1/task-graphs/{id}/nodes/{nodeId}/block', 'Block a node with a reason.', { rename: { id: 'graphId' } }),
  t('metagit_task_complete', 'metagit', 'POST', '/v1/task-graphs/{id}/nodes/{nodeId}/complete', 'Complete a node; its dependents become ready.', {
    rename: { id: 'graphId' },
  }),
  t('metagit_task_cancel', 'metagit', 'POST', '/v1/task-graphs/{id}/nodes/{nodeId}/cancel', 'Cancel a node; its dependents stay pending and name it.', {
    rename: { id: 'graphId' },
  }),
  t(
    'metagit_task_bind_acl',
    'metagit',
    'PUT',
    '/v1/task-graphs/{id}/nodes/{nodeId}/acl',
    'Store an ACL binding (branch, lease, worktree, claims) and suggested commands on a node; no side effect.',
    { rename: { id: 'graphId' } },
  ),
  t(
    'graph_record_integration',
    'graph-runner',
    'PUT',
    '/v1/graphs/{id}/integration',
    'Coordinator only: record the runner’s integration (ordered sources, applied commits, aggregate) or its conflict.',
  ),
];

/** A JSON Schema object (as the OpenAPI document holds them). */
export type JsonSchema = Record<string, unknown>;

interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; required?: boolean; schema?: JsonSchema; description?: string }[];
        requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
        responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
      }
    >
  >;
  components?: { schemas?: Record<string, JsonSchema> };
}

/**
 * Drops what costs an agent's context and checks nothing: descriptions below the tool's own
 * arguments, titles, examples. Validation keywords stay.
 */
function compact(schema: unknown, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => compact(s, depth));
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'title' || k === 'examples' || k === '$schema' || k === 'id' || (k === 'description' && depth > 1)) continue;
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as object).map(([p, ps]) => [p, compact(ps, depth + 1)])) : compact(v, depth);
  }
  return out;
}

/** Inlines `#/components/schemas/…` references (MCP clients need self-contained schemas). */
function inline(doc: OpenApiDocument, schema: unknown, seen: string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inline(doc, s, seen));
  if (!schema || typeof schema !== 'object') return schema;
  const ref = (schema as { $ref?: string }).$ref;
  if (typeof ref === 'string') {
    const name = ref.replace('#/components/schemas/', '');
    if (seen.includes(name)) return {};
    return inline(doc, doc.components?.schemas?.[name] ?? {}, [...seen, name]);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = inline(doc, v, seen);
  return out;
}

/** How deep an output schema describes a result: deeper objects and arrays are only typed. */
export const OUTPUT_SCHEMA_DEPTH = 2;

/**
 * A route's success answer as a self-contained schema for validation: references inlined,
 * descriptions, titles and zod's safe-integer bounds dropped (the input schema carries the words),
 * and below {@link OUTPUT_SCHEMA_DEPTH} levels of properties an object or array is only typed, so
 * that a graph's record does not cost every client 10 KB per tool. What it declares, it checks.
 */
function resultSchema(doc: OpenApiDocument, schema: unknown, depth = 0, seen: string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((s) => resultSchema(doc, s, depth, seen));
  if (!schema || typeof schema !== 'object') return schema;
  const ref = (schema as { $ref?: string }).$ref;
  if (typeof ref === 'string') {
    const name = ref.replace('#/components/schemas/', '');
    return seen.includes(name) ? {} : resultSchema(doc, doc.components?.schemas?.[name] ?? {}, depth, [...seen, name]);
  }
  const node = schema as JsonSchema;
  if (depth >= OUTPUT_SCHEMA_DEPTH && (node.properties || node.items || node.anyOf || node.oneOf || node.allOf)) {
    const type = node.type ?? (node.properties ? 'object' : node.items ? 'array' : undefined);
    return type ? { type } : {};
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description' || k === 'title' || k === 'examples' || k === '$schema' || k === 'id') continue;
    if ((k === 'minimum' || k === 'maximum') && Math.abs(v as number) === Number.MAX_SAFE_INTEGER) continue;
    if (k === 'properties') {
      out[k] = Object.fromEntries(Object.entries(v as object).map(([p, ps]) => [p, resultSchema(doc, ps, depth + 1, seen)]));
    } else if (k === 'items' || k === 'additionalProperties') {
      out[k] = resultSchema(doc, v, depth + 1, seen);
    } else {
      out[k] = resultSchema(doc, v, depth, seen);
    }
  }
  return out;
}

/**
 * The `error` of a failed call (errorResult in server.ts): its members are named once, in the
 * server's instructions (`{code, status, message, recoverable, stage?, details?, next}`), not
 * typed again in every tool, to keep the list small.
 */
export const ERROR_SCHEMA: JsonSchema = { type: 'object', required: ['code', 'status', 'message', 'recoverable', 'next'] };

/**
 * A tool's output schema: exactly one of `result` (the given schema) and `error` (ERROR_SCHEMA).
 */
export function outputSchema(result: JsonSchema): JsonSchema {
  return { type: 'object', properties: { result, error: ERROR_SCHEMA }, minProperties: 1, maxProperties: 1, additionalProperties: false };
}

/**
 * The request headers a tool takes as arguments, each where its route takes it: `idempotencyKey`
 * (`Idempotency-Key`, on state-changing POSTs: a retry with the same key replays the first
 * answer; docs/reference/http-api.md "Safe retries") and `ifMatch` (`If-Match`, on the item edits: the revision you
 * read, so a retried or stale edit is refused with `revision_mismatch` instead of applied again).
 */
export const HEADER_ARGS: Record<string, { arg: string; schema: JsonSchema }> = {
  'idempotency-key': {
    arg: 'idempotencyKey',
    schema: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Optional. Send the same key when you retry this call: the first answer comes back and nothing is done twice.',
    },
  },
  'if-match': {
    arg: 'ifMatch',
    schema: {
      type: 'integer',
      minimum: 0,
      description:
        'Optional. The item’s revision you read: the change applies only if it is still current (else revision_mismatch), so a retry never applies twice.',
    },
  },
};

/** How a tool's arguments map onto its route: path and query parameters, and the body. */
export interface ToolBinding {
  tool: ApiTool;
  inputSchema: JsonSchema;
  /** `{result}` as the route's success answer, or `{error}` (outputSchema). */
  outputSchema: JsonSchema;
  path: { name: string; arg: string }[];
  query: string[];
  /** `flat`: the body's properties are top-level arguments; `wrapped`: the body is the `body` argument; null: no body. */
  body: 'flat' | 'wrapped' | null;
  /** Request headers taken from arguments (HEADER_ARGS). */
  headers: { name: string; arg: string }[];
}

/**
 * The input schema of each tool from the OpenAPI document: path parameters (required strings),
 * query parameters, and the JSON body — flattened into the arguments when it is an object, else
 * taken as `body`. `additionalProperties: false` throughout the top level: unknown arguments are
 * refused.
 */
export function bindTools(document: unknown, tools: readonly ApiTool[] = API_TOOLS): ToolBinding[] {
  const doc = document as OpenApiDocument;
  return tools.map((tool) => {
    const op = doc.paths[tool.path]?.[tool.method.toLowerCase()];
    if (!op) throw new Error(`MCP tool ${tool.name}: no ${tool.method} ${tool.path} in the OpenAPI document`);
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    const path: ToolBinding['path'] = [];
    const query: string[] = [];
    for (const p of op.parameters ?? []) {
      if (p.in === 'path') {
        const arg = tool.rename?.[p.name] ?? p.name;
        properties[arg] = { ...(inline(doc, p.schema) as JsonSchema), ...(p.description ? { description: p.description } : {}) };
        required.push(arg);
        path.push({ name: p.name, arg });
      } else if (p.in === 'query') {
        properties[p.name] = { ...(inline(doc, p.schema) as JsonSchema), ...(p.description ? { description: p.description } : {}) };
        if (p.required) required.push(p.name);
        query.push(p.name);
      }
    }
    let body: ToolBinding['body'] = null;
    const raw = op.requestBody?.content?.['application/json']?.schema;
    if (raw) {
      let schema = inline(doc, raw) as JsonSchema;
      // A nullable body (`anyOf: [object, null]`) is its object.
      const variants = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
      if (variants && variants.length === 2 && variants.some((v) => v.type === 'null')) schema = variants.find((v) => v.type !== 'null')!;
      if (schema.type === 'object' && schema.properties && !schema.anyOf && !schema.oneOf) {
        body = 'flat';
        for (const [k, v] of Object.entries(schema.properties as Record<string, unknown>)) {
          if (k in properties) throw new Error(`MCP tool ${tool.name}: body property ${k} collides with a parameter`);
          properties[k] = v;
        }
        for (const r of (schema.required as string[] | undefined) ?? []) required.push(r);
      } else {
        body = 'wrapped';
        properties.body = tool.bodyLike ? { type: 'object', description: `The same body as ${tool.bodyLike}'s` } : schema;
        required.push('body');
      }
    }
    const headers: ToolBinding['headers'] = [];
    for (const p of op.parameters ?? []) {
      const h = p.in === 'header' ? HEADER_ARGS[p.name] : undefined;
      if (!h) continue;
      if (h.arg in properties) throw new Error(`MCP tool ${tool.name}: ${h.arg} collides with a parameter`);
      properties[h.arg] = h.schema;
      headers.push({ name: p.name, arg: h.arg });
    }
    const inputSchema = compact({ type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false }) as JsonSchema;
    const success = Object.entries(op.responses ?? {}).find(([status]) => /^2\d\d$/.test(status))?.[1];
    const answer = success?.content?.['application/json']?.schema;
    return { tool, inputSchema, outputSchema: outputSchema(answer ? (resultSchema(doc, answer) as JsonSchema) : {}), path, query, body, headers };
  });
}

/** What every client is told once (the MCP `instructions`). */
export const INSTRUCTIONS =
  'Coord: todo lists, claims and Task Graphs for fleets of coding agents. Every tool returns structuredContent ' +
  "{result} (the REST route's JSON; shapes in /openapi.json) or, with isError, {error: {code, status, message, " +
  'recoverable, stage?, details?, next}}: `next` is the legitimate next step. Lists are paginated: pass nextCursor ' +
  'back as cursor. Claims are atomic: losing a race is an error with code already_claimed, not a fault. A write tool ' +
  'takes idempotencyKey: retry with the same key and the first answer comes back, nothing done twice.';

/** The legitimate next step after a problem `code`, for an agent reading the error. */
export function nextStep(code: string, status: number): string {
  const steps: Record<string, string> = {
    already_claimed:
      'It is not free: another session holds it, or it is already done (perhaps by you). Read it (todo_get) for its status and owner, or pick other ready work (todo_next, metagit_task_ready).',
    dependency_blocked: 'It waits on unfinished dependencies (named in details): finish those first, or pick ready work.',
    reserved_for_assignee: 'It is reserved for another session: call todo_next for your own work.',
    lease_expired: 'Your claim lapsed: claim it again with todo_claim if it is still todo.',
    invalid_transition: 'Read the item (todo_get) and act on its current status.',
    managed_by_graph: 'It is a Task Graph subtask: use the graph tools (graph_complete, graph_fail, coordinate_agents_task_graph_status).',
    claim_requires_session: 'Only sessions claim: use a session token.',
    TASK_GRAPH_INVALID: 'Fix the graph at the named stage and validate again.',
    TASK_STATE_CONFLICT: 'Read the graph (coordinate_agents_task_graph_status) and act on its current state; nothing was changed.',
    TASK_ALREADY_RUNNING: 'Another dispatch holds that subtask: pick another, or wait for its outcome.',
    AGENT_RUNTIME_ERROR: 'Report the real commit and paths, or report the failure with graph_fail.',
    validation_failed: 'Fix the named arguments and call again.',
    unauthorized: 'The token is missing, unknown or stopped: get a valid session token.',
    forbidden: 'You may see it but not do this: ask its owner or an operator.',
  };
  if (steps[code]) return steps[code];
  if (status === 404) return 'It does not exist or you may not see it: check the id (list tools show what you can see).';
  if (status >= 500) return 'A server-side fault: retry later.';
  return 'Nothing was changed: read the current state and try again if it still applies.';
}
