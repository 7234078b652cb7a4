/**
 * Task Graph v1 and Intent Map v1 over the one engine: agents registry, validate, create, status,
 * inspect, list and plan (seed 002; docs/seeds/task-graph-v1.md §1–§6, §12; docs/architecture.md §D1).
 *
 * Storage. A graph is a container in the todo engine: `graphs` holds the parent facts, the
 * persisted `maxConcurrency` and the normalised Intent Map; each subtask is a todo row in scope
 * `graph:<parentTaskId>` (title = subtask title or id, bounded to `max_title` bytes; assignee
 * `agent:<implementer>`; positions 1..n in byte order of subtask id; edges in `todo_dependencies`,
 * every one unfinished at create) plus a `graph_subtasks` row with the contract facts (exact
 * implementer, spec, sorted `dependsOn`, and later the FAILED/BLOCKED/STOPPED outcome, reason and
 * evidence). The contract states are a view (graphs.view.ts).
 *
 * Consistency. Create writes graph, subtasks, edges, Intent Map and events in one transaction
 * under the graph lock (`graphLock`, the lock execution will take too). Reads take
 * one REPEATABLE READ READ ONLY snapshot, so status and plan see one consistent state; plan and
 * validate write nothing. Persisted facts are re-checked on every read (`planGraph`'s snapshot
 * check) and a contradiction is 409 `TASK_STATE_CONFLICT`, never repaired (docs/seeds/task-graph-v1.md §3).
 */
import type postgres from 'postgres';
import type { Ctx } from '../todos/todos.context.js';
import type { Db } from '../db/client.js';
import { lockXact } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { appendEvents, auditTopic, emitsFor, topicOf, type EventInput } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId } from '../lib/ids.js';
import { unstorable } from '../http/text.js';
import {
  TASK_GRAPH_MAX_SUBTASKS,
  deriveFrontier,
  intentCoverageFacts,
  planGraph,
  validateIntentMap,
  validateTaskGraph,
  type AgentRegistryRecord,
  type NormalizedGraph,
  type NormalizedIntentMap,
  type TaskGraphInvalid,
  type TaskGraphPlan,
  type TaskGraphSchedulingError,
} from './contract/index.js';
import { taskGraphInvalid } from './contract/failure.js';
import { AGENT_ID_PATTERN, TASK_ID_PATTERN, isAgentId } from './contract/ids.js';
import { isPlainObject, ownValue, truncateUtf8 } from './contract/text.js';
import { graphColumns, loadSubtaskRows, loadVisibleGraph, visibleTo } from './graphs.repo.js';
import { graphLock, graphScope } from './graphs.repo.js';
import { mutable, storedSubtasks, toRecord, toSummary, type GraphRecordView, type GraphRow, type StoredParent, type SubtaskRow } from './graphs.view.js';
import { actorOf } from '../auth/actor.js';
import { insertEdges, insertItems } from '../todos/todos.repo.js';

/** The lifecycle events `inspect` returns (docs/seeds/task-graph-v1.md §4: "Inspect returns up to 100 events"). */
export const INSPECT_EVENT_LIMIT = 100;
/** Default page size of `GET /v1/graphs` (capped by `list_limit`). */
export const GRAPH_LIST_DEFAULT_LIMIT = 100;

// ---------------------------------------------------------------------------------------------
// Errors

/** A contract validation failure as a 400 problem with the contract's members (docs/seeds/task-graph-v1.md §2, §12). */
function invalid(error: TaskGraphInvalid): never {
  throw new DomainError(
    'TASK_GRAPH_INVALID',
    error.message,
    { stage: error.stage, message: error.message, recoverable: false, taskId: error.taskId, details: error.details },
    400,
  );
}

/** A scheduling refusal on read (contradictory persisted facts) as a 409 problem (docs/seeds/task-graph-v1.md §3). */
function conflict(error: TaskGraphSchedulingError): never {
  const code = error.code === 'INVALID_AGENT_CONFIG' ? 'INVALID_AGENT_CONFIG' : 'TASK_STATE_CONFLICT';
  throw new DomainError(
    code,
    error.message,
    {
      stage: error.stage,
      message: error.message,
      recoverable: error.recoverable,
      taskId: error.taskId,
      details: error.details,
    },
    409,
  );
}

/** The `updatedAt` half of a graph-list cursor: UTC with microseconds, as `listGraphs` writes it. */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

// ---------------------------------------------------------------------------------------------
// Agents registry

export interface AgentView {
  id: string;
  adapter: string | null;
  command: string | null;
  createdBy: string;
  createdAt: string;
}

interface AgentRow {
  id: string;
  adapter: string | null;
  command: string | null;
  created_by: string;
  created_at: Date;
}

const toAgent = (r: AgentRow): AgentView => ({
  id: r.id,
  adapter: r.adapter,
  command: r.command,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
});

/**
 * Registers a configured Agent (seed 002 "Every subtask has one explicit, configured Implementer";
 * docs/seeds/task-graph-v1.md §1). Agents are operator configuration: only users may register (403 `forbidden`
 * for sessions). `adapter` and `command` are optional facts reported by Graph Preflight; the audit
 * records the registration (`audit:agents`). The id is
 * the contract's Agent format and is never trimmed. Errors: 403 forbidden, 409 agent_exists.
 */
export async function registerAgent(ctx: Ctx, input: { id: string; adapter?: string; command?: string }): Promise<AgentView> {
  if (ctx.principal.kind !== 'user') fail('forbidden', 'only an operator (user) may register Agents');
  const row = await withTx(ctx.sql, async (tx) => {
    const [r] = await tx<AgentRow[]>`
      insert into agents (id, adapter, command, created_by, team_id)
      values (${input.id}, ${input.adapter ?? null}, ${input.command ?? null}, ${ctx.principal.id}, ${ctx.principal.teamId})
      on conflict (team_id, id) do nothing
      returning id, adapter, command, created_by, created_at`;
    if (!r)
      throw new DomainError('agent_exists', `Agent "${input.id}" is already registered in your team; use it, or register another id`, { agent: input.id });
    const payload = { event: 'agent-registered', id: r.id, adapter: r.adapter, command: r.command };
    await appendEvents(
      tx,
      ctx.principal.teamId,
      [{ topic: auditTopic('agents'), event: 'agent-registered', subjectId: r.id, payload }],
      actorOf(ctx.principal),
    );
    return r;
  });
  return toAgent(row);
}

/** Lists configured Agents in byte order of id, keyset-paginated (page ≤ `list_limit`). */
export async function listAgents(ctx: Ctx, input: { limit?: number; cursor?: string }): Promise<{ agents: AgentView[]; nextCursor: string | null }> {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const after = input.cursor ? (decodeCursor(input.cursor, [AGENT_ID_PATTERN])[0] as string) : undefined;
  const rows = await ctx.sql<AgentRow[]>`
    select id, adapter, command, created_by, created_at from agents
     where team_id = ${ctx.principal.teamId} and ${after === undefined ? ctx.sql`true` : ctx.sql`id collate "C" > ${after}`}
     order by id collate "C" limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { agents: page.map(toAgent), nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null };
}

// ---------------------------------------------------------------------------------------------
// Validate

/** What a validate/create body carries: the raw graph and the raw (optional) Intent Map. */
export interface GraphRequest {
  graph: unknown;
  intentMap: unknown;
}

/**
 * Splits a request body into graph and Intent Map. The body is the envelope `{graph, intentMap?}`
 * when it is a JSON object whose own keys are `graph` and optionally `intentMap`; any other body
 * is the Task Graph v1 document itself (so `curl --data @examples/task-graph.json` works).
 */
export function splitGraphRequest(body: unknown): GraphRequest {
  if (isPlainObject(body) && Object.hasOwn(body, 'graph')) {
    const keys = Object.keys(body);
    if (keys.every((key) => key === 'graph' || key === 'intentMap')) {
      return { graph: ownValue(body, 'graph'), intentMap: ownValue(body, 'intentMap') };
    }
  }
  return { graph: body, intentMap: undefined };
}

/**
 * The well-formed Agent ids a raw graph names (planner, reviewer, parent implementer, each
 * subtask's implementer; at most 256 subtasks: a longer list fails the count check first).
 */
function namedAgents(graph: unknown): string[] {
  const ids = new Set<string>();
  // A malformed id can never be configured, and Postgres text cannot hold every string (U+0000).
  const add = (v: unknown) => {
    if (isAgentId(v)) ids.add(v);
  };
  if (!isPlainObject(graph)) return [];
  const parent = ownValue(graph, 'parentTask');
  if (isPlainObject(parent)) for (const key of ['planner', 'reviewer', 'implementer']) add(ownValue(parent, key));
  const subtasks = ownValue(graph, 'subtasks');
  if (Array.isArray(subtasks)) {
    for (const subtask of subtasks.slice(0, TASK_GRAPH_MAX_SUBTASKS)) if (isPlainObject(subtask)) add(ownValue(subtask, 'implementer'));
  }
  return [...ids];
}

/** The configured subset of the Agents a graph names (membership is all validation needs). */
async function configuredAgents(db: Db, teamId: string, graph: unknown): Promise<Set<string>> {
  const named = namedAgents(graph);
  if (named.length === 0) return new Set();
  const rows = await db<{ id: string }[]>`select id from agents where team_id = ${teamId} and id = any(${named}::text[])`;
  return new Set(rows.map((r) => r.id));
}

/**
 * Coord's one addition to the contract's checks, after them: Postgres text is UTF-8 without
 * U+0000, so a title, spec or write-intent pattern holding U+0000 or an unpaired surrogate (legal
 * in JSON, not in Unicode text) is refused at its stage (`graph-validation`, or
 * `intent-map-validation` for a pattern) instead of failing or changing in storage. Validate runs
 * it too, so validate accepts exactly what create accepts. Every other stored field is an id the
 * contract restricts to `[A-Za-z0-9_-]`.
 */
function checkStorable(graph: NormalizedGraph): void {
  const parentTaskId = graph.parentTaskId;
  const check = (text: string | undefined, what: string, subtaskId: string | null) => {
    const why = unstorable(text);
    if (why) invalid(taskGraphInvalid('graph-validation', `Task Graph v1 ${what} contains ${why}, which Coord cannot store.`, { parentTaskId, subtaskId }));
  };
  check(graph.parentTask.title, 'parentTask.title', null);
  check(graph.parentTask.spec, 'parentTask.spec', null);
  for (const s of graph.subtasks) {
    check(s.title, `subtask "${s.id}" title`, s.id);
    check(s.spec, `subtask "${s.id}" specification`, s.id);
  }
}

/**
 * {@link checkStorable} for the Intent Map: the contract refuses control characters in a pattern
 * (so NUL), but an unpaired surrogate passes it and then failed the jsonb insert with a 500
 * (found by test/http/fuzz.test.ts).
 */
function checkStorableIntentMap(map: NormalizedIntentMap | null): void {
  for (const s of map?.subtasks ?? []) {
    for (const pattern of s.writeIntent) {
      const why = unstorable(pattern);
      if (why) {
        invalid(
          taskGraphInvalid('intent-map-validation', `Intent Map v1 writeIntent pattern of subtask "${s.id}" contains ${why}, which Coord cannot store.`, {
            parentTaskId: map!.parentTaskId,
            subtaskId: s.id,
          }),
        );
      }
    }
  }
}

/**
 * Runs the contract's validators in order: the graph (stage `graph-validation`, docs/seeds/task-graph-v1.md §2)
 * against the configured Agents, then the optional Intent Map (stage `intent-map-validation`,
 * docs/seeds/task-graph-v1.md §5), with {@link checkStorable} after the graph's checks and {@link checkStorableIntentMap} after the map's. Throws 400 `TASK_GRAPH_INVALID` with
 * `stage`, `details`, `taskId`, `recoverable:false`.
 */
async function validateRequest(db: Db, teamId: string, request: GraphRequest): Promise<{ graph: NormalizedGraph; intentMap: NormalizedIntentMap | null }> {
  const agents = await configuredAgents(db, teamId, request.graph);
  const graph = validateTaskGraph(request.graph, { configuredAgents: agents });
  if (!graph.ok) invalid(graph.error);
  checkStorable(graph.value);
  const intentMap = validateIntentMap(request.intentMap, graph.value);
  if (!intentMap.ok) invalid(intentMap.error);
  checkStorableIntentMap(intentMap.value);
  return { graph: graph.value, intentMap: intentMap.value };
}

/**
 * `POST /v1/graphs/validate`: validates a graph and optional Intent Map without writing anything
 * (seed 002 "Validation boundary"). Success: `{ ok, validation: { sideEffects: false }, facts,
 * intentMap (normalised or null), intentCoverage }`: the contract's durable facts view (parent
 * and subtask identities, implementers, sorted dependencies), not the specs sent in. Failure: 400
 * `TASK_GRAPH_INVALID` (see {@link validateRequest}).
 */
export async function validateGraph(ctx: Ctx, body: unknown) {
  const { graph, intentMap } = await validateRequest(ctx.sql, ctx.principal.teamId, splitGraphRequest(body));
  return {
    ok: true as const,
    validation: { sideEffects: false as const },
    facts: mutable(graph.facts),
    intentMap: mutable(intentMap),
    intentCoverage: intentCoverageFacts(
      graph.subtasks.map((s) => s.id),
      intentMap,
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// Create

/** `s` bounded to `max` UTF-8 bytes on a character boundary, trimmed; `fallback` when that empties it. */
function boundTitle(s: string, max: number, fallback: string): string {
  const t = truncateUtf8(s, max).trim();
  return t !== '' ? t : truncateUtf8(fallback, max);
}

/**
 * `POST /v1/graphs`: validates like {@link validateGraph}, then writes in one transaction under
 * the graph lock: the `graphs` row (parent facts with state CREATED, `maxConcurrency`, normalised
 * Intent Map), one todo row per subtask in scope `graph:<id>` with its edges, the `graph_subtasks`
 * facts, the scope's position counter, an `added` event per subtask (when `emit_events` covers the
 * scope) and the contract's `TASK_GRAPH_CREATED` journal event (always: the contract's Event
 * Journal, docs/seeds/task-graph-v1.md §4). Returns the record with `validation.sideEffects: true`.
 * Errors: 400 TASK_GRAPH_INVALID (nothing written), 409 TASK_STATE_CONFLICT when a graph with the
 * same id exists (nothing changes; docs/seeds/task-graph-v1.md §3).
 */
export async function createGraph(ctx: Ctx, body: unknown): Promise<{ ok: true; validation: { sideEffects: true }; graph: GraphRecordView }> {
  const { graph, intentMap } = await validateRequest(ctx.sql, ctx.principal.teamId, splitGraphRequest(body));
  const id = graph.parentTaskId;
  const scope = graphScope(id);
  const teamId = ctx.principal.teamId;
  const maxTitle = Math.min(ctx.config.todo.maxTitle, 500);
  const parent: StoredParent = { ...graph.parentTask, state: 'CREATED' };
  const record = await withTx(ctx.sql, async (tx) => {
    await lockXact(tx, graphLock(teamId, id));
    const [row] = await tx<GraphRow[]>`
      insert into graphs (id, scope, parent, max_concurrency, intent_map, created_by, team_id)
      values (${id}, ${scope}, ${JSON.stringify(parent)}::text::jsonb, ${graph.maxConcurrency},
              ${intentMap === null ? null : JSON.stringify(intentMap)}::text::jsonb, ${ctx.principal.id}, ${teamId})
      on conflict do nothing
      returning team_id, id, scope, parent, max_concurrency, intent_map, created_by, created_at, updated_at, revision`;
    if (!row) {
      throw new DomainError('TASK_STATE_CONFLICT', `Task Graph or Task already exists: ${id}`, {
        recoverable: false,
        taskId: id,
        details: { parentTaskId: id, subtaskId: null },
      });
    }
    const n = graph.subtasks.length;
    const [{ last_position }] = await tx<{ last_position: number }[]>`
      insert into scopes (team_id, scope, last_position) values (${teamId}, ${scope}, ${n})
      on conflict (team_id, scope) do update set last_position = scopes.last_position + ${n}
      returning last_position`;
    const base = last_position - n;
    const todoIds = new Map(graph.subtasks.map((s) => [s.id, newId('td')]));
    const todoId = (subtaskId: string) => todoIds.get(subtaskId) as string;
    const subtasks = graph.subtasks;
    const todos = await insertItems(
      tx,
      { teamId, scope, createdBy: ctx.principal.id },
      subtasks.map((s, i) => ({
        id: todoId(s.id),
        title: boundTitle(s.title ?? s.id, maxTitle, s.id),
        assignee: `agent:${s.implementer}`,
        position: base + i + 1,
        unfinishedDeps: s.dependsOn.length,
      })),
    );
    const edges = subtasks.flatMap((s) => s.dependsOn.map((d) => [todoId(s.id), todoId(d)] as const));
    await insertEdges(tx, edges);
    const subtaskRows = await tx<{ subtask_id: string; updated_at: Date }[]>`
      insert into graph_subtasks (team_id, graph_id, subtask_id, todo_id, implementer, title, spec, depends_on)
      select ${teamId}, ${id}, u.subtask_id, u.todo_id, u.implementer, u.title, u.spec,
             array(select jsonb_array_elements_text(u.depends_on::jsonb))
        from unnest(${subtasks.map((s) => s.id)}::text[],
                    ${subtasks.map((s) => todoId(s.id))}::text[],
                    ${subtasks.map((s) => s.implementer)}::text[],
                    ${subtasks.map((s) => s.title ?? null)}::text[],
                    ${subtasks.map((s) => s.spec)}::text[],
                    ${subtasks.map((s) => JSON.stringify(s.dependsOn))}::text[]) as u(subtask_id, todo_id, implementer, title, spec, depends_on)
      returning subtask_id, updated_at`;
    const updatedAt = new Map(subtaskRows.map((r) => [r.subtask_id, r.updated_at]));
    void todos;
    const rows: SubtaskRow[] = subtasks.map((s) => ({
      subtask_id: s.id,
      todo_id: todoId(s.id),
      implementer: s.implementer,
      title: s.title ?? null,
      spec: s.spec,
      depends_on: [...s.dependsOn],
      outcome: null,
      reason: null,
      evidence: null,
      updated_at: updatedAt.get(s.id) as Date,
      status: 'todo',
      unfinished_deps: s.dependsOn.length,
      note: null,
    }));
    const { frontier } = deriveFrontier({ maxConcurrency: graph.maxConcurrency, subtasks: storedSubtasks(rows) });
    const topic = topicOf(scope);
    const events: EventInput[] = [
      {
        topic,
        event: 'TASK_GRAPH_CREATED',
        subjectId: id,
        payload: {
          event: 'TASK_GRAPH_CREATED',
          id,
          scope,
          status: 'CREATED',
          revision: row.revision,
          parentTaskId: id,
          state: 'CREATED',
          maxConcurrency: graph.maxConcurrency,
          subtaskIds: subtasks.map((s) => s.id),
          frontier,
          agent: graph.parentTask.planner,
          role: 'planner',
          createdBy: ctx.principal.id,
        },
      },
    ];
    if (emitsFor(scope, ctx.config.todo.emitEvents)) {
      for (const s of subtasks) {
        const blockedBy = s.dependsOn.map(todoId).sort();
        events.push({
          topic,
          event: 'added',
          subjectId: todoId(s.id),
          payload: {
            event: 'added',
            id: todoId(s.id),
            scope,
            status: s.dependsOn.length > 0 ? 'blocked' : 'todo',
            revision: 1,
            ...(blockedBy.length > 0 ? { blockedBy } : {}),
            subtaskId: s.id,
            parentTaskId: id,
          },
        });
      }
    }
    await appendEvents(tx, teamId, events, actorOf(ctx.principal));
    return toRecord(row, rows);
  });
  return { ok: true, validation: { sideEffects: true }, graph: record };
}

// ---------------------------------------------------------------------------------------------
// Reads

interface Snapshot {
  graph: GraphRow;
  rows: SubtaskRow[];
}

/** Runs `fn` in one REPEATABLE READ, READ ONLY transaction: one consistent snapshot, no writes. */
async function readSnapshot<T>(ctx: Ctx, fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  return (await ctx.sql.begin('isolation level repeatable read read only', fn)) as T;
}

/**
 * Reads graph `id` and its subtask rows if the caller may see it (graphs.repo.ts: users, the
 * creating session's subtree, sessions bound to an Agent the graph names), else 404
 * `graph_not_found` (existence is not leaked).
 */
async function loadGraph(ctx: Ctx, tx: Db, id: string, withSpecs: boolean): Promise<Snapshot> {
  const graph = await loadVisibleGraph(tx, ctx.principal, id);
  const rows = await loadSubtaskRows(tx, graph.team_id, id, ctx.config.todo.claimLeaseMs, withSpecs);
  return { graph, rows };
}

/** Re-checks the persisted facts (docs/seeds/task-graph-v1.md §3: never repaired); a contradiction is 409. Returns the plan. */
function checkedPlan(snapshot: Snapshot, agents?: AgentRegistryRecord[]): TaskGraphPlan {
  const result = planGraph({
    parentTaskId: snapshot.graph.id,
    maxConcurrency: snapshot.graph.max_concurrency,
    subtasks: storedSubtasks(snapshot.rows),
    intentMap: snapshot.graph.intent_map,
    ...(agents === undefined ? {} : { agents }),
  });
  if (!result.ok) conflict(result.error);
  return result.value;
}

/**
 * `GET /v1/graphs/{id}` (status; seed 002 "Durable graph create, status, and inspect"): the record
 * with derived subtask states, the frontier, the derived parent state and `intentCoverage`, from
 * one snapshot. Errors: 404 graph_not_found, 409 TASK_STATE_CONFLICT (contradictory stored facts).
 */
export async function getGraph(ctx: Ctx, id: string): Promise<GraphRecordView> {
  return readSnapshot(ctx, async (tx) => {
    const snapshot = await loadGraph(ctx, tx, id, true);
    checkedPlan(snapshot);
    return toRecord(snapshot.graph, snapshot.rows);
  });
}

/**
 * `GET /v1/graphs/{id}/inspect`: the status record plus the newest {@link INSPECT_EVENT_LIMIT}
 * lifecycle events of the graph (`TASK_GRAPH_*` on topic `todo:graph:<id>`), oldest first, and
 * whether older ones were left out (docs/seeds/task-graph-v1.md §4). The topic's todo events (`added`, …) are
 * at `GET /v1/events/log?topic=todo:graph:<id>`.
 */
export async function inspectGraph(ctx: Ctx, id: string) {
  return readSnapshot(ctx, async (tx) => {
    const snapshot = await loadGraph(ctx, tx, id, true);
    checkedPlan(snapshot);
    const rows = await tx<{ id: number; event: string; payload: Record<string, unknown>; created_at: Date }[]>`
      select id, event, payload, created_at from events
       where team_id = ${snapshot.graph.team_id} and topic = ${topicOf(snapshot.graph.scope)} and event like 'TASK\\_GRAPH\\_%'
       order by id desc limit ${INSPECT_EVENT_LIMIT + 1}`;
    const truncated = rows.length > INSPECT_EVENT_LIMIT;
    const events = rows
      .slice(0, INSPECT_EVENT_LIMIT)
      .reverse()
      .map((r) => ({ seq: Number(r.id), event: r.event, at: r.created_at.toISOString(), data: r.payload }));
    return { graph: toRecord(snapshot.graph, snapshot.rows), events, eventsTruncated: truncated };
  });
}

/**
 * `GET /v1/graphs/{id}/plan` (Graph Preflight; seed 002 "Read-only Graph Preflight", docs/seeds/task-graph-v1.md
 * §5–§6): reads one snapshot (persisted `maxConcurrency`, RUNNING count, normalised Intent Map,
 * the implementers' registry records) and returns `planGraph`'s deterministic plan. Writes
 * nothing; unchanged state gives a deep-equal plan. Agent facts: `registered`, `adapter`,
 * `command` from the registry; `commandSource` is null (Coord's registry does not record one).
 * Errors: 404 graph_not_found, 409 TASK_STATE_CONFLICT / INVALID_AGENT_CONFIG (stage
 * `graph-scheduling`) for contradictory persisted or registry facts.
 */
export async function planForGraph(ctx: Ctx, id: string): Promise<TaskGraphPlan> {
  return readSnapshot(ctx, async (tx) => {
    const snapshot = await loadGraph(ctx, tx, id, false);
    const implementers = [...new Set(snapshot.rows.map((r) => r.implementer))];
    const agents = await tx<{ id: string; adapter: string | null; command: string | null }[]>`
      select id, adapter, command from agents where team_id = ${snapshot.graph.team_id} and id = any(${implementers}::text[]) order by id collate "C"`;
    return checkedPlan(
      snapshot,
      agents.map((a) => ({ id: a.id, adapter: a.adapter, command: a.command, commandSource: null })),
    );
  });
}

/**
 * `GET /v1/graphs`: the graphs the caller may see, newest update first (`updatedAt` desc, then id
 * desc; docs/seeds/task-graph-v1.md §3), keyset-paginated (`nextCursor`; default page 100, ≤ `list_limit`).
 * Each entry is a summary: derived state, per-state counts, coverage; no specs.
 */
export async function listGraphs(ctx: Ctx, input: { limit?: number; cursor?: string }) {
  const limit = Math.min(input.limit ?? GRAPH_LIST_DEFAULT_LIMIT, ctx.config.todo.listLimit);
  const after = input.cursor ? (decodeCursor(input.cursor, [CURSOR_TIME, TASK_ID_PATTERN]) as string[]) : undefined;
  return readSnapshot(ctx, async (tx) => {
    const graphs = await tx<(GraphRow & { updated_key: string })[]>`
      select ${graphColumns(tx)},
             to_char(g.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_key
        from graphs g left join sessions cs on cs.id = g.created_by
       where ${visibleTo(tx, ctx.principal)}
         and ${after ? tx`(g.updated_at, g.id) < (${after[0]}::timestamptz, ${after[1]})` : tx`true`}
       order by g.updated_at desc, g.id desc
       limit ${limit + 1}`;
    const more = graphs.length > limit;
    const page = more ? graphs.slice(0, limit) : graphs;
    const ids = page.map((g) => g.id);
    const rows = ids.length
      ? await tx<(SubtaskRow & { graph_id: string })[]>`
          select gs.graph_id, gs.subtask_id, gs.todo_id, gs.implementer, gs.title, gs.depends_on, gs.outcome, gs.reason,
                 null as evidence, gs.updated_at, t.status, t.unfinished_deps, t.note
            from graph_subtasks gs join todos t on t.id = gs.todo_id
           where gs.team_id = ${ctx.principal.teamId} and gs.graph_id = any(${ids}::text[])`
      : [];
    const byGraph = new Map<string, SubtaskRow[]>(ids.map((gid) => [gid, []]));
    for (const r of rows) byGraph.get(r.graph_id)?.push(r);
    const last = page[page.length - 1];
    return {
      graphs: page.map((g) => toSummary(g, byGraph.get(g.id) ?? [])),
      nextCursor: more && last ? encodeCursor([last.updated_key, last.id]) : null,
    };
  });
}
