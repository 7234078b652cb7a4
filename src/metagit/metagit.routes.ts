/**
 * metagit RFC-0008 routes (seed 001; docs/seeds/metagit.md): intents, task graphs, deterministic expand,
 * ready, node transitions and the ACL binding. JSON is camelCase (docs/architecture.md §D9: `graphId`,
 * `nodeId`, `dependsOn`); the RFC's event names are kept (`TaskReady`, …). Each handler calls one
 * function of metagit.intents.ts, metagit.graphs.ts or metagit.nodes.ts; buildApp registers the
 * `metagit:` scope kind (src/modules.ts `wireModules`).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import type { Ctx } from '../todos/todos.context.js';
import { bindAcl, blockNode, cancelNode, completeNode, getNode, reopenNode, startNode } from './metagit.nodes.js';
import { cancelTaskGraph, createTaskGraph, expandTaskGraph, getTaskGraph, listTaskGraphs, readyNodes, reopenTaskGraph } from './metagit.graphs.js';
import { createIntent, getIntent, listIntents } from './metagit.intents.js';
import {
  Text,
  Intent,
  Node,
  Graph,
  Params,
  NodeParams,
  GraphSummary,
  NodeResult,
  CreateTaskIntent,
  CreateTaskGraph,
  ExpandTaskGraph,
  BindAcl,
} from './metagit.schemas.js';

const tags = ['metagit task graphs'];
/** The node and graph summary a transition answers. */
async function nodeResult(p: Promise<{ graph: { nodes: { nodeId: string }[] }; summary: unknown }>, nodeId: string) {
  const out = await p;
  return { node: out.graph.nodes.find((n) => n.nodeId === nodeId)!, graph: out.summary } as never;
}

/** Registers the metagit routes (listed in `src/modules.ts`). */
export function metagitRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const ctx = (req: { principal: Ctx['principal'] }): Ctx => ({ sql: deps.sql, config: deps.config, principal: req.principal });

  r.post(
    '/v1/intents',
    {
      schema: {
        tags,
        operationId: 'intentsCreate',
        summary: 'Create a TaskIntent',
        body: CreateTaskIntent,
        response: { 201: z.object({ intent: Intent }), ...problemResponses('intent_exists', 'payload_too_large') },
      },
    },
    async (req, reply) => {
      reply.status(201);
      return { intent: await createIntent(ctx(req), req.body) };
    },
  );

  r.get(
    '/v1/intents',
    {
      schema: {
        tags,
        operationId: 'intentsList',
        summary: 'List intents',
        querystring: z.strictObject({ limit: z.coerce.number().int().min(1).max(100_000).optional(), cursor: z.string().max(200).optional() }),
        response: { 200: z.object({ intents: z.array(Intent), nextCursor: z.string().nullable() }), ...problemResponses('invalid_cursor') },
      },
    },
    async (req) => listIntents(ctx(req), req.query),
  );

  r.get(
    '/v1/intents/:id',
    {
      schema: {
        tags,
        operationId: 'intentsGet',
        summary: 'Read an intent',
        params: Params,
        response: { 200: z.object({ intent: Intent }), ...problemResponses('intent_not_found') },
      },
    },
    async (req) => ({ intent: await getIntent(ctx(req), req.params.id) }),
  );

  r.post(
    '/v1/task-graphs',
    {
      schema: {
        tags,
        operationId: 'metagitCreate',
        summary: 'Create a task graph (metagit `task create`)',
        description:
          'Creates the graph and its root intent `intent-<graphId>` in one transaction, with `TaskGraphCreated`. A taken `graphId` is 409 and writes nothing.',
        body: CreateTaskGraph,
        response: { 201: z.object({ graph: Graph }), ...problemResponses('task_graph_exists', 'intent_exists', 'payload_too_large') },
      },
    },
    async (req, reply) => {
      reply.status(201);
      return { graph: await createTaskGraph(ctx(req), req.body) };
    },
  );

  r.get(
    '/v1/task-graphs',
    {
      schema: {
        tags,
        operationId: 'metagitList',
        summary: 'List task graphs',
        querystring: z.strictObject({
          status: z.enum(['active', 'completed', 'cancelled']).optional(),
          limit: z.coerce.number().int().min(1).max(100_000).optional(),
          cursor: z.string().max(200).optional(),
        }),
        response: {
          200: z.object({
            graphs: z.array(
              z.object({
                graphId: z.string(),
                title: z.string(),
                status: z.string(),
                rootIntentId: z.string(),
                objectiveId: z.string().nullable(),
                updatedAt: z.string(),
                revision: z.number().int(),
              }),
            ),
            nextCursor: z.string().nullable(),
          }),
          ...problemResponses('invalid_cursor'),
        },
      },
    },
    async (req) => listTaskGraphs(ctx(req), req.query),
  );

  r.get(
    '/v1/task-graphs/:id',
    {
      schema: {
        tags,
        operationId: 'metagitGet',
        summary: 'A task graph with every node’s status (metagit `task list --graph-id`)',
        params: Params,
        response: { 200: z.object({ graph: Graph }), ...problemResponses('task_graph_not_found') },
      },
    },
    async (req) => ({ graph: await getTaskGraph(ctx(req), req.params.id) }),
  );

  r.get(
    '/v1/task-graphs/:id/ready',
    {
      schema: {
        tags,
        operationId: 'metagitReady',
        summary: 'The ready nodes (metagit `task ready`)',
        params: Params,
        response: { 200: z.object({ graphId: z.string(), nodes: z.array(Node) }), ...problemResponses('task_graph_not_found') },
      },
    },
    async (req) => readyNodes(ctx(req), req.params.id),
  );

  r.post(
    '/v1/task-graphs/:id/cancel',
    {
      schema: {
        tags,
        operationId: 'metagitCancelGraph',
        summary: 'Cancel a task graph',
        params: Params,
        response: { 200: z.object({ graph: Graph }), ...problemResponses('task_graph_not_found') },
      },
    },
    async (req) => ({ graph: await cancelTaskGraph(ctx(req), req.params.id) }),
  );

  r.post(
    '/v1/task-graphs/:id/reopen',
    {
      schema: {
        tags,
        operationId: 'metagitReopenGraph',
        summary: 'Reopen a cancelled task graph',
        params: Params,
        response: { 200: z.object({ graph: Graph }), ...problemResponses('task_graph_not_found') },
      },
    },
    async (req) => ({ graph: await reopenTaskGraph(ctx(req), req.params.id) }),
  );

  r.post(
    '/v1/task-graphs/:id/expand',
    {
      schema: {
        tags,
        operationId: 'metagitExpand',
        summary: 'Expand from an outline (metagit `task expand`)',
        description:
          'An indented outline (text) or a list of `{title, nodeId?, dependsOn?, project?, repository?}`; the RFC spellings `node_id` and `depends_on` are accepted too. Deterministic: slug ids, `-2`, `-3`, … for repeats and for ' +
          'collisions with existing nodes (references in the batch follow the renamed node); each outline line depends on the nearest shallower line. All nodes and ' +
          'edges commit together or not at all; unknown ids and cycles are refused naming the ids.',
        params: Params,
        body: ExpandTaskGraph,
        response: {
          200: z.object({ added: z.array(Node).describe('The new nodes, in outline order'), graph: GraphSummary }),
          ...problemResponses(
            'task_graph_not_found',
            'node_id_taken',
            'dependency_not_found',
            'dependency_cycle',
            'title_too_long',
            'invalid_transition',
            'payload_too_large',
          ),
        },
      },
    },
    async (req) => {
      const out = await expandTaskGraph(ctx(req), req.params.id, req.body.outline);
      const added = new Set(out.result.added);
      return { added: out.graph.nodes.filter((n) => added.has(n.nodeId)), graph: out.summary } as never;
    },
  );

  r.get(
    '/v1/task-graphs/:id/nodes/:nodeId',
    {
      schema: {
        tags,
        operationId: 'metagitNode',
        summary: 'A node (metagit `task status --node-id`)',
        params: NodeParams,
        response: { 200: z.object({ node: Node }), ...problemResponses('task_graph_not_found', 'task_node_not_found') },
      },
    },
    async (req) => ({ node: await getNode(ctx(req), req.params.id, req.params.nodeId) }),
  );

  const transitions = [
    [
      'start',
      'Start a ready node: a claim owned by the calling session (one winner)',
      startNode,
      ['claim_requires_session', 'already_claimed', 'dependency_blocked', 'invalid_transition'],
    ],
    [
      'complete',
      'Complete a node (ready, running or blocked); dependents become ready',
      completeNode,
      ['dependency_blocked', 'invalid_transition', 'forbidden', 'already_claimed'],
    ],
    ['cancel', 'Cancel a node; its dependents stay pending and name it', cancelNode, ['invalid_transition', 'forbidden']],
    ['reopen', 'Reopen a blocked, cancelled or completed node', reopenNode, ['invalid_transition']],
  ] as const;
  for (const [path, summary, fn, codes] of transitions) {
    r.post(
      `/v1/task-graphs/:id/nodes/:nodeId/${path}`,
      {
        schema: {
          tags,
          operationId: `metagit${path[0].toUpperCase()}${path.slice(1)}`,
          summary,
          params: NodeParams,
          body: z.strictObject({}).nullish(),
          response: { 200: NodeResult, ...problemResponses('task_graph_not_found', 'task_node_not_found', ...codes) },
        },
      },
      async (req) => nodeResult(fn(ctx(req), req.params.id, req.params.nodeId), req.params.nodeId),
    );
  }

  r.post(
    '/v1/task-graphs/:id/nodes/:nodeId/block',
    {
      schema: {
        tags,
        operationId: 'metagitBlock',
        summary: 'Block a node with a reason (metagit `task block --reason`)',
        params: NodeParams,
        body: z.strictObject({ reason: Text(2000) }),
        response: {
          200: NodeResult,
          ...problemResponses('task_graph_not_found', 'task_node_not_found', 'invalid_transition', 'forbidden', 'note_too_long', 'dependency_blocked'),
        },
      },
    },
    async (req) => nodeResult(blockNode(ctx(req), req.params.id, req.params.nodeId, req.body.reason), req.params.nodeId),
  );

  r.put(
    '/v1/task-graphs/:id/nodes/:nodeId/acl',
    {
      schema: {
        tags,
        operationId: 'metagitBindAcl',
        summary: 'Bind an ACL to a node (metagit `task bind-acl`): stored hints only, no git or other side effect',
        params: NodeParams,
        body: BindAcl,
        response: { 200: NodeResult, ...problemResponses('task_graph_not_found', 'task_node_not_found', 'invalid_transition') },
      },
    },
    async (req) => nodeResult(bindAcl(ctx(req), req.params.id, req.params.nodeId, req.body), req.params.nodeId),
  );
}
