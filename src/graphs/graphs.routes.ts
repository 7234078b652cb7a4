/**
 * Task Graph v1 routes (docs/architecture.md §D7 "Graphs"; seed 002): the agents registry, validate,
 * create, list, status, inspect and plan. Execution (run, claim, complete, recover, …) is in
 * execution/; `advance` is the runner's loop (cli/runner/).
 * Each handler parses, calls one service function and maps the result; the rules live in
 * graphs.service.ts and the pure contract in contract/.
 */
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import type { Ctx } from '../todos/todos.context.js';
import { INTENT_MAP_MAX_INPUT_BYTES, TASK_GRAPH_MAX_INPUT_BYTES } from './contract/index.js';
import {
  AgentEnvelope,
  AgentList,
  CreateGraphResult,
  GraphEnvelope,
  GraphIdParams,
  GraphList,
  GraphRequestBody,
  InspectResult,
  ListAgentsQuery,
  ListGraphsQuery,
  PlanResult,
  RegisterAgentBody,
  TaskGraphConflictProblem,
  TaskGraphInvalidProblem,
  ValidateGraphResult,
} from './graphs.schemas.js';
import { createGraph, getGraph, inspectGraph, listAgents, listGraphs, planForGraph, registerAgent, validateGraph } from './graphs.service.js';

/**
 * The request body bound of validate and create: the contract's 64 MiB graph document bound
 * ({@link TASK_GRAPH_MAX_INPUT_BYTES}: 256 subtasks × 256 KiB specs) plus the 1 MiB Intent Map
 * bound plus 1 MiB for the envelope and per-subtask framing (ids, titles, keys). Larger bodies
 * are refused before parsing with 413 `payload_too_large`.
 */
export const GRAPH_BODY_LIMIT = TASK_GRAPH_MAX_INPUT_BYTES + INTENT_MAP_MAX_INPUT_BYTES + 1024 * 1024;

/**
 * The body of validate and create is documented as the contract's schemas but parsed as unknown:
 * the hand-written validators own the check order and the messages (docs/seeds/task-graph-v1.md §2).
 */
const rawBody: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never);

const tags = ['graphs'];

/** 400 for validate/create: the contract's TASK_GRAPH_INVALID plus the transport's own 400s. */
const invalidResponse = TaskGraphInvalidProblem.describe('Problem codes: TASK_GRAPH_INVALID, malformed_json, validation_failed');

/** 409 for reads that re-check persisted facts (stage graph-scheduling). */
const readConflict = TaskGraphConflictProblem.describe('Problem codes: TASK_STATE_CONFLICT');

/**
 * Registers the agents registry and the Task Graph routes (listed in `src/modules.ts`):
 * `POST/GET /v1/agents`, `POST /v1/graphs/validate`, `POST/GET /v1/graphs`, `GET /v1/graphs/{id}`,
 * `GET /v1/graphs/{id}/inspect`, `GET /v1/graphs/{id}/plan`. Validate and create accept bodies up
 * to {@link GRAPH_BODY_LIMIT} bytes; every other route keeps the server's default body limit.
 * Importing this module registers the `graph:` scope kind.
 */
export function graphsRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const ctx = (req: { principal: Ctx['principal'] }): Ctx => ({ sql: deps.sql, config: deps.config, principal: req.principal });

  r.post(
    '/v1/agents',
    {
      schema: {
        tags: ['agents'],
        operationId: 'agentsRegister',
        summary: 'Register a configured Agent',
        description:
          'Adds an Agent identity (the contract’s format: 1–64 of [a-z0-9_-], starting with a letter, not a Windows device name) ' +
          'with optional adapter and command facts. Task Graph validation checks planner, reviewer and implementers against ' +
          'the team’s registry (seed 002; docs/seeds/task-graph-v1.md §1); ids are unique within a team. Operators (users) only.',
        body: RegisterAgentBody,
        response: { 201: AgentEnvelope, ...problemResponses('forbidden', 'agent_exists', 'malformed_json', 'payload_too_large') },
      },
    },
    async (req, reply) => {
      reply.status(201);
      return { agent: await registerAgent(ctx(req), req.body) };
    },
  );

  r.get(
    '/v1/agents',
    {
      schema: {
        tags: ['agents'],
        operationId: 'agentsList',
        summary: 'List configured Agents',
        description: 'The team’s Agents, byte order of id, keyset-paginated (`nextCursor`), page ≤ list_limit.',
        querystring: ListAgentsQuery,
        response: { 200: AgentList, ...problemResponses('invalid_cursor') },
      },
    },
    async (req) => listAgents(ctx(req), req.query),
  );

  r.post(
    '/v1/graphs/validate',
    {
      bodyLimit: GRAPH_BODY_LIMIT,
      validatorCompiler: rawBody,
      // The contract refuses unstorable text as TASK_GRAPH_INVALID; a validation writes nothing, so no Idempotency-Key.
      config: { checksOwnText: true, idempotency: false },
      schema: {
        tags,
        operationId: 'graphsValidate',
        summary: 'Validate a Task Graph (and Intent Map) without writing',
        description:
          'Body: `{graph, intentMap?}` or a bare Task Graph v1 document. Runs the contract’s validation in its fixed order ' +
          '(docs/seeds/task-graph-v1.md §2, then §5 for the Intent Map) against the configured Agents. Success returns the normalised ' +
          'facts with `validation.sideEffects: false`; failure is 400 `TASK_GRAPH_INVALID` with `stage` ' +
          '(`graph-validation` / `intent-map-validation`), `details`, `taskId`. Nothing is written either way. ' +
          `Bodies over ${GRAPH_BODY_LIMIT} bytes are 413.`,
        body: GraphRequestBody,
        response: { 200: ValidateGraphResult, ...problemResponses('payload_too_large'), 400: invalidResponse },
      },
    },
    async (req) => validateGraph(ctx(req), req.body),
  );

  r.post(
    '/v1/graphs',
    {
      bodyLimit: GRAPH_BODY_LIMIT,
      validatorCompiler: rawBody,
      config: { checksOwnText: true }, // the contract refuses unstorable text as TASK_GRAPH_INVALID
      schema: {
        tags,
        operationId: 'graphsCreate',
        summary: 'Create a Task Graph',
        description:
          'Validates like `/v1/graphs/validate`, then writes the graph, one work item per subtask in scope `graph:<id>` ' +
          '(assignee `agent:<implementer>`), the dependency edges, the normalised Intent Map and a `TASK_GRAPH_CREATED` event ' +
          'in one transaction (seed 002 “Durable graph create”). A graph with the same id is 409 `TASK_STATE_CONFLICT` and ' +
          'changes nothing. Returns the record with `validation.sideEffects: true`.',
        body: GraphRequestBody,
        response: {
          201: CreateGraphResult,
          ...problemResponses('payload_too_large'),
          400: invalidResponse,
          409: TaskGraphConflictProblem.describe('Problem codes: TASK_STATE_CONFLICT'),
        },
      },
    },
    async (req, reply) => {
      const result = await createGraph(ctx(req), req.body);
      reply.status(201).header('location', `/v1/graphs/${result.graph.id}`).header('etag', `"${result.graph.revision}"`);
      return result;
    },
  );

  r.get(
    '/v1/graphs',
    {
      schema: {
        tags,
        operationId: 'graphsList',
        summary: 'List Task Graphs',
        description: 'The graphs the caller may see, newest update first, keyset-paginated. Summaries only (no specs).',
        querystring: ListGraphsQuery,
        response: { 200: GraphList, ...problemResponses('invalid_cursor') },
      },
    },
    async (req) => listGraphs(ctx(req), req.query),
  );

  r.get(
    '/v1/graphs/:id',
    {
      schema: {
        tags,
        operationId: 'graphsGet',
        summary: 'Task Graph status',
        description:
          'The durable record: parent facts, subtasks with derived states (READY/WAITING/BLOCKED re-derived on every read), ' +
          'the frontier (byte-order sorted), the derived parent state and `intentCoverage`, from one consistent snapshot. ' +
          'Persisted facts are re-checked; a contradiction is 409 `TASK_STATE_CONFLICT` (never repaired).',
        params: GraphIdParams,
        response: { 200: GraphEnvelope, ...problemResponses('graph_not_found'), 409: readConflict },
      },
    },
    async (req, reply) => {
      const graph = await getGraph(ctx(req), req.params.id);
      reply.header('etag', `"${graph.revision}"`);
      return { graph };
    },
  );

  r.get(
    '/v1/graphs/:id/inspect',
    {
      schema: {
        tags,
        operationId: 'graphsInspect',
        summary: 'Task Graph inspect',
        description: 'Status plus the newest lifecycle events (`TASK_GRAPH_*`, at most 100, oldest first; docs/seeds/task-graph-v1.md §4).',
        params: GraphIdParams,
        response: { 200: InspectResult, ...problemResponses('graph_not_found'), 409: readConflict },
      },
    },
    async (req) => inspectGraph(ctx(req), req.params.id),
  );

  r.get(
    '/v1/graphs/:id/plan',
    {
      schema: {
        tags,
        operationId: 'graphsPlan',
        summary: 'Graph Preflight (read-only plan)',
        description:
          'Deterministic, read-only, idempotent: the conflict-aware READY wave, a decision with a bounded reason for every ' +
          'subtask, `conflictDeferred`, `capacityLimited`, `concurrentWriteSafety` (UNVERIFIED with an INTENT_COVERAGE_UNAVAILABLE ' +
          'risk without an Intent Map), agent facts from the registry and the preflight boundaries (seed 002 “Read-only Graph ' +
          'Preflight”; docs/seeds/task-graph-v1.md §5–§6). Writes nothing.',
        params: GraphIdParams,
        response: {
          200: PlanResult,
          ...problemResponses('graph_not_found'),
          409: TaskGraphConflictProblem.describe('Problem codes: INVALID_AGENT_CONFIG, TASK_STATE_CONFLICT'),
        },
      },
    },
    async (req) => ({ plan: await planForGraph(ctx(req), req.params.id) }),
  );
}
