/**
 * The wire shapes of metagit RFC-0008's routes (seed 001; docs/seeds/metagit.md), written once: the
 * routes validate and document with them, and the use cases take their inputs as their types.
 * JSON is camelCase (docs/architecture.md §D9); an outline item also accepts the RFC's `node_id` and
 * `depends_on`.
 */
import { z } from 'zod';
import { StoredText } from '../http/text.js';
import { SLUG_ID } from './metagit.outline.js';

export const Text = StoredText;
/** A metagit id (graph, node, intent): the pattern of `SLUG_ID` (metagit.outline.ts), never `.` or `..`. */
export const Slug = z.string().regex(SLUG_ID, 'letters, digits, underscore, dot or hyphen; at most 128; not only dots');

export const IntentFields = {
  title: Text(500).describe('Trimmed; required'),
  goal: Text(8192).describe('Trimmed; required'),
  acceptance: z.array(Text(2000)).max(100).optional().describe('Acceptance criteria'),
  project: Text(200).optional(),
  repos: z.array(Text(300)).max(100).optional(),
  objectiveId: Slug.optional(),
  handoffId: Slug.optional(),
};

export const Intent = z
  .object({
    intentId: z.string(),
    title: z.string(),
    goal: z.string(),
    acceptance: z.array(z.string()),
    project: z.string().nullable(),
    repos: z.array(z.string()),
    objectiveId: z.string().nullable(),
    handoffId: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'MetagitIntent' });

export const NodeStatus = z.enum(['pending', 'ready', 'blocked', 'running', 'completed', 'cancelled']).meta({ id: 'MetagitNodeStatus' });

export const Node = z
  .object({
    graphId: z.string(),
    nodeId: z.string(),
    title: z.string(),
    status: NodeStatus.describe('A view of the engine row (docs/seeds/metagit.md §3)'),
    dependsOn: z.array(z.string()),
    waitingOn: z.array(z.object({ nodeId: z.string(), status: NodeStatus })).describe('pending: the unfinished dependencies'),
    blockerReason: z.string().nullable().describe('blocked: the reason; pending on a cancelled dependency: names it'),
    owner: z.string().nullable().describe('running/blocked: the session that started or blocked it'),
    intentId: z.string().nullable(),
    project: z.string().nullable(),
    repository: z.string().nullable(),
    agentId: z.string().nullable(),
    acl: z.unknown().describe('The ACL binding (bind-acl), or null'),
    priority: z.number().int(),
    todoId: z.string().describe('The engine row in scope metagit:<graphId>'),
    revision: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'MetagitNode' });

export const Graph = z
  .object({
    graphId: z.string(),
    title: z.string(),
    rootIntentId: z.string(),
    objectiveId: z.string().nullable(),
    handoffId: z.string().nullable(),
    status: z.enum(['active', 'completed', 'cancelled']).describe('completed when every node is completed; cancelled after a cancel'),
    scope: z.string(),
    counts: z.record(z.string(), z.number().int()),
    nodes: z.array(Node).describe('By position (expand order)'),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    revision: z.number().int(),
  })
  .meta({ id: 'MetagitGraph' });

export const Params = z.object({ id: z.string().max(200).describe('The graph id') });
export const NodeParams = z.object({ id: z.string().max(200), nodeId: z.string().max(200) });

/** What a write answers besides its node(s): status, counts and the ready set — never every node. */
export const GraphSummary = z
  .object({
    graphId: z.string(),
    title: z.string(),
    rootIntentId: z.string(),
    objectiveId: z.string().nullable(),
    handoffId: z.string().nullable(),
    status: z.enum(['active', 'completed', 'cancelled']),
    scope: z.string(),
    counts: z.record(z.string(), z.number().int()),
    readyNow: z.array(z.string()).describe('The ready node ids after this change'),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    revision: z.number().int(),
  })
  .meta({ id: 'MetagitGraphSummaryAfterWrite' });
export const NodeResult = z.object({ node: Node, graph: GraphSummary }).meta({ id: 'MetagitNodeResult' });

export const NodeIdField = Slug.optional();
export const DependsOnField = z.array(z.string().max(200)).max(256).optional();
/** An outline item; `node_id` / `depends_on` are the RFC's spellings (seed 001), normalised by `normaliseOutlineItem` in metagit.outline.ts. */
export const OutlineItem = z
  .strictObject({
    title: Text(2000),
    nodeId: NodeIdField,
    node_id: NodeIdField.describe('The RFC spelling of nodeId; give one of the two'),
    dependsOn: DependsOnField,
    depends_on: DependsOnField.describe('The RFC spelling of dependsOn; give one of the two'),
    project: Text(200).optional(),
    repository: Text(300).optional(),
  })
  .refine((o) => !(o.nodeId !== undefined && o.node_id !== undefined) && !(o.dependsOn !== undefined && o.depends_on !== undefined), {
    message: 'nodeId/node_id and dependsOn/depends_on are the same fields; give one spelling of each',
  });

// Bodies with a component id are made once per process: zod's global registry keys components by
// id, so a second copy (a second app in one process) would render as a different component.
export const CreateTaskIntent = z.strictObject({ intentId: Slug.optional(), ...IntentFields }).meta({ id: 'CreateMetagitIntent' });
export const CreateTaskGraph = z
  .strictObject({ graphId: Slug.optional().describe('Default: 12 random hex'), ...IntentFields })
  .meta({ id: 'CreateMetagitGraph' });
export const ExpandTaskGraph = z.strictObject({ outline: z.union([Text(1024 * 1024), z.array(OutlineItem).max(1000)]) }).meta({ id: 'ExpandMetagitGraph' });

/** The body of `PUT …/nodes/{nodeId}/acl` (RFC `task bind-acl`, docs/seeds/metagit.md §5). */
export const BindAcl = z.strictObject({
  agentId: Slug,
  branch: Text(300).min(1).optional(),
  leaseId: Text(200).optional(),
  worktreeId: Text(200).optional(),
  claimIds: z.array(Text(200)).max(100).optional(),
  pattern: Text(500).optional().describe('The claim pattern (default **/*)'),
});
