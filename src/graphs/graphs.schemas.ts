/**
 * Wire shapes of the Task Graph routes (seed 002; docs/seeds/task-graph-v1.md §1–§6). The contract's own
 * schemas (`TaskGraphV1`, `IntentMapV1`, `TaskGraphFrontier`, `TaskGraphPlan`, …) come from
 * `contract/schemas.ts`; this file wraps them into requests and responses. Task Graph v1 JSON
 * keeps the contract's names exactly (docs/architecture.md §D9); Coord's additions (`scope`, `todoId`,
 * `revision`, `createdBy`) are camelCase too.
 */
import { z } from 'zod';
import { Problem } from '../http/problem.js';
import {
  AgentIdSchema,
  IntentCoverageSchema,
  IntentMapV1Schema,
  NormalizedIntentMapSchema,
  NormalizedTaskGraphSchema,
  ScopePolicySchema,
  SubtaskStateSchema,
  TaskGraphFrontierSchema,
  TaskGraphPlanSchema,
  TaskGraphStateSchema,
  TaskGraphInvalidSchema,
  TaskGraphSchedulingErrorSchema,
  TaskGraphV1Schema,
} from './contract/schemas.js';

// ---------------------------------------------------------------------------------------------
// Agents registry

export const RegisterAgentBody = z
  .strictObject({
    id: AgentIdSchema.describe('The exact Agent identity graphs name as planner, reviewer or implementer; never trimmed'),
    adapter: z.string().trim().min(1).max(200).optional().describe('The Adapter this Agent runs through (a fact for Graph Preflight)'),
    command: z.string().trim().min(1).max(4096).optional().describe('The effective configured command (a fact for Graph Preflight)'),
  })
  .meta({ id: 'RegisterAgent' });

export const Agent = z
  .object({
    id: z.string(),
    adapter: z.string().nullable(),
    command: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'Agent', description: 'A configured Agent (Task Graph v1: every planner, reviewer and implementer must be one).' });

export const AgentEnvelope = z.object({ agent: Agent });

export const AgentList = z.object({ agents: z.array(Agent), nextCursor: z.string().nullable() }).meta({ id: 'AgentList' });

export const ListAgentsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size, capped at list_limit'),
  cursor: z.string().max(200).optional().describe('`nextCursor` of the previous page'),
});

// ---------------------------------------------------------------------------------------------
// Validate / create requests

/**
 * The documented request body of validate and create: either the envelope
 * `{ graph, intentMap? }` or a bare Task Graph v1 document (no Intent Map). The server parses the
 * body as unknown and runs the contract's hand-written validators, so the check order and the
 * messages are the contract's (docs/seeds/task-graph-v1.md §2, §5), never zod's.
 */
export const GraphRequestEnvelope = z
  .strictObject({
    graph: TaskGraphV1Schema,
    intentMap: IntentMapV1Schema.optional().describe('Optional Intent Map v1 companion; omit (or null) for a legacy graph'),
  })
  .meta({ id: 'TaskGraphRequest', description: 'A Task Graph v1 document with its optional Intent Map v1 companion.' });

export const GraphRequestBody = z.union([GraphRequestEnvelope, TaskGraphV1Schema]);

// ---------------------------------------------------------------------------------------------
// Records

const Timestamp = z.string().describe('ISO 8601, database clock');

export const TaskGraphSubtaskRecord = z
  .object({
    id: z.string(),
    subtaskId: z.string().describe('Same as `id` (the contract record carries both)'),
    parentTaskId: z.string(),
    title: z.string().optional(),
    implementer: z.string(),
    spec: z.string(),
    dependsOn: z.array(z.string()).describe('Sorted in byte order'),
    state: SubtaskStateSchema.describe('Derived: READY/WAITING/BLOCKED re-derived from the dependencies on every read'),
    status: SubtaskStateSchema.describe('Always equal to `state`'),
    reason: z.string().nullable().describe('Bounded to 8 KiB'),
    evidence: z.unknown().describe('Verified IMPLEMENTATION_DONE evidence of the current attempt (bounded), or null'),
    todoId: z.string().describe('The engine row of this subtask in scope `graph:<parentTaskId>`'),
    todoStatus: z.enum(['todo', 'in-progress', 'done', 'blocked']).describe('The engine row’s effective status'),
    attempt: z.number().int().describe('Dispatches so far (0 before the first)'),
    sessionId: z.string().nullable().describe('The current dispatch’s own session'),
    dispatchedBy: z.string().nullable().describe('The principal that dispatched it (run or claim)'),
    dispatchedAt: Timestamp.nullable(),
    worktreePath: z.string().nullable().describe('The Runtime-owned worktree, relative to the repository root: `.coord/worktrees/<parentTaskId>/<subtaskId>`'),
    branch: z.string().nullable().describe('`coord/<parentTaskId>/<subtaskId>`'),
    ref: z.string().nullable().describe('`refs/heads/coord/<parentTaskId>/<subtaskId>`'),
    leaseExpiresAt: Timestamp.nullable().describe('RUNNING: last progress + claim_lease'),
    implementationCommit: z.string().nullable().describe('The verified implementation commit'),
    scopeEvidence: z.unknown().describe('Scope Audit v1 evidence (graphs with an Intent Map), or null'),
    lastError: z.unknown().describe('The last runtime error `{code, message, stage, recoverable, classification, …}`, or null'),
    cleanup: z.unknown().describe('The runner’s last cleanup outcome `{status, error, worktree, at}`, or null'),
    updatedAt: Timestamp,
  })
  .meta({ id: 'TaskGraphSubtaskRecord' });

/** One `recovery[]` entry (docs/seeds/task-graph-v1.md §10). */
export const RecoveryEntrySchema = z
  .object({
    parentTaskId: z.string(),
    subtaskId: z.string(),
    implementer: z.string(),
    state: SubtaskStateSchema,
    classification: z.enum(['running', 'completed', 'completed-unverified', 'interrupted', 'failed', 'stopped', 'blocked', 'ready', 'waiting']),
    recoverable: z.boolean().describe('An explicit resume can move it on'),
    action: z.literal('resume').nullable(),
    reason: z.string().nullable(),
    lastError: z.unknown(),
    implementationCommit: z.string().nullable(),
    completionEvidence: z.boolean().describe('Verified IMPLEMENTATION_DONE evidence is recorded'),
    attempt: z.number().int(),
    baseCommit: z.string().nullable(),
    worktree: z
      .object({
        path: z.string(),
        branch: z.string(),
        ref: z.string(),
        exists: z.boolean().nullable().describe('The runner’s fact: null here (the coordinator has no checkout)'),
        safe: z.boolean().nullable(),
        registered: z.boolean().nullable(),
        owned: z.boolean(),
        ownershipKnown: z.boolean(),
      })
      .nullable(),
    session: z
      .object({ id: z.string(), agent: z.string(), state: z.string().nullable(), hostPid: z.number().int().nullable(), hostAlive: z.boolean().nullable() })
      .nullable(),
    sessionOwned: z.boolean(),
    sessionHealthy: z.boolean(),
    cleanup: z.unknown(),
  })
  .meta({ id: 'TaskGraphRecoveryEntry' });

export const TaskGraphRecord = z
  .object({
    schemaVersion: z.literal(1),
    kind: z.literal('task-graph'),
    id: z.string(),
    parentTaskId: z.string(),
    scope: z.string().describe('`graph:<parentTaskId>`: the todo scope holding the subtasks'),
    parentTask: z.object({
      id: z.string(),
      title: z.string(),
      planner: z.string(),
      reviewer: z.string(),
      spec: z.string().optional(),
      implementer: z.string().optional(),
      state: TaskGraphStateSchema,
      status: TaskGraphStateSchema,
      reason: z.string().nullable(),
      evidence: z.unknown(),
      createdAt: Timestamp,
      updatedAt: Timestamp,
    }),
    state: TaskGraphStateSchema.describe('Derived from the subtask states (docs/seeds/task-graph-v1.md §3)'),
    status: TaskGraphStateSchema.describe('Always equal to `state`'),
    reason: z.string().nullable(),
    evidence: z.unknown(),
    maxConcurrency: z.number().int().min(1).max(32),
    subtasks: z.array(TaskGraphSubtaskRecord).describe('Sorted by id in byte order'),
    frontier: TaskGraphFrontierSchema,
    baseCommit: z.string().nullable().describe('The graph base commit fixed by the first run (lower-case hex), or null'),
    recovery: z.array(RecoveryEntrySchema).describe('One entry per subtask, by id (docs/seeds/task-graph-v1.md §10)'),
    integration: z.unknown().describe('The recorded integration (PUT /v1/graphs/{id}/integration), or null'),
    review: z.unknown().describe('The latest review decision, or null'),
    intentMap: NormalizedIntentMapSchema.nullable().describe('The persisted normalised Intent Map; null for a legacy graph'),
    intentCoverage: IntentCoverageSchema,
    createdBy: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    revision: z.number().int().describe('Bumped by every durable change; also the ETag'),
  })
  .meta({ id: 'TaskGraphRecord', description: 'A durable Task Graph with its derived frontier and intent coverage.' });

export const GraphEnvelope = z.object({ graph: TaskGraphRecord });

export const ValidateGraphResult = z
  .object({
    ok: z.literal(true),
    validation: z.object({ sideEffects: z.literal(false) }),
    facts: NormalizedTaskGraphSchema.shape.facts.describe('The durable facts view: parent and subtask identities, implementers, sorted dependencies'),
    intentMap: NormalizedIntentMapSchema.nullable(),
    intentCoverage: IntentCoverageSchema,
  })
  .meta({ id: 'TaskGraphValidation', description: 'Validation succeeded; nothing was written.' });

export const CreateGraphResult = z
  .object({
    ok: z.literal(true),
    validation: z.object({ sideEffects: z.literal(true) }),
    graph: TaskGraphRecord,
  })
  .meta({ id: 'TaskGraphCreated' });

export const GraphEvent = z
  .object({
    seq: z.number().int().describe('The event’s sequence number (SSE `id:`)'),
    event: z
      .string()
      .describe(
        '`TASK_GRAPH_CREATED`, `TASK_GRAPH_SUBTASK_STATE_CHANGED`, `TASK_GRAPH_STATUS_CHANGED`, `TASK_GRAPH_INTEGRATION_RECORDED`, `TASK_GRAPH_REVIEW_RECORDED`, `TASK_GRAPH_CLEANUP_RECORDED`',
      ),
    at: Timestamp,
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'TaskGraphEvent' });

export const InspectResult = z
  .object({
    graph: TaskGraphRecord,
    events: z.array(GraphEvent).max(100).describe('The newest lifecycle events (at most 100), oldest first'),
    eventsTruncated: z.boolean().describe('True when older lifecycle events were left out'),
  })
  .meta({ id: 'TaskGraphInspect' });

export const PlanResult = z.object({ plan: TaskGraphPlanSchema });

export const GraphSummary = z
  .object({
    id: z.string(),
    parentTaskId: z.string(),
    scope: z.string(),
    title: z.string(),
    state: TaskGraphStateSchema,
    maxConcurrency: z.number().int(),
    subtaskCount: z.number().int(),
    counts: z.object({
      ready: z.number().int(),
      waiting: z.number().int(),
      blocked: z.number().int(),
      running: z.number().int(),
      succeeded: z.number().int(),
      failed: z.number().int(),
      stopped: z.number().int(),
    }),
    intentCoverageAvailable: z.boolean(),
    scopePolicy: ScopePolicySchema.nullable(),
    createdBy: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    revision: z.number().int(),
  })
  .meta({ id: 'TaskGraphSummary' });

export const GraphList = z
  .object({ graphs: z.array(GraphSummary), nextCursor: z.string().nullable() })
  .meta({ id: 'TaskGraphList', description: 'Newest update first (`updatedAt` descending, then id).' });

export const ListGraphsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size (default 100), capped at list_limit'),
  cursor: z.string().max(500).optional().describe('`nextCursor` of the previous page'),
});

export const GraphIdParams = z.object({
  id: z.string().max(200).describe('The parent Task id (`task-…`)'),
});

// ---------------------------------------------------------------------------------------------
// Problems with the contract's members

/**
 * 400 of validate/create. A `TASK_GRAPH_INVALID` problem is the contract's runtime error object
 * (`TaskGraphInvalidError`: code, stage, message, recoverable, taskId, details) plus the RFC 9457
 * members; the transport's own 400s (`malformed_json`, `validation_failed`) are plain problems.
 */
export const TaskGraphInvalidProblem = z
  .union([z.intersection(Problem, TaskGraphInvalidSchema), Problem])
  .meta({ id: 'TaskGraphInvalidProblem', description: 'A problem document; TASK_GRAPH_INVALID adds the contract’s error members.' });

/**
 * 409 of status/inspect/plan: contradictory persisted or registry facts are the contract's
 * `TaskGraphSchedulingError` (stage `graph-scheduling`) plus the RFC 9457 members. A duplicate
 * create is a plain `TASK_STATE_CONFLICT` problem with `taskId`, `recoverable` and `details`.
 */
export const TaskGraphConflictProblem = z
  .union([z.intersection(Problem, TaskGraphSchedulingErrorSchema), Problem])
  .meta({ id: 'TaskGraphConflictProblem', description: 'A problem document; scheduling refusals add the contract’s error members.' });
