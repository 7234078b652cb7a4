/**
 * Wire shapes of the Task Graph routes (seed 002; seeds-notes §3.1–§3.6). The contract's own
 * schemas (`TaskGraphV1`, `IntentMapV1`, `TaskGraphFrontier`, `TaskGraphPlan`, …) come from
 * `contract/schemas.ts`; this file wraps them into requests and responses. Task Graph v1 JSON
 * keeps the contract's names exactly (DESIGN §9); Coord's additions (`scope`, `todoId`,
 * `revision`, `createdBy`) are camelCase too.
 */
import { z } from 'zod';
import { Problem } from '../http/problem.js';
import { AGENT_ID_PATTERN, RESERVED_DEVICE_NAMES } from './contract/ids.js';
import {
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

/** Agent id: the contract's format (`^[a-z][a-z0-9_-]{0,63}$`, not a Windows device name). */
export const AgentId = z
  .string()
  .regex(AGENT_ID_PATTERN, 'an Agent id is 1–64 of [a-z0-9_-] starting with a lowercase letter')
  .refine((id) => !RESERVED_DEVICE_NAMES.has(id), 'an Agent id cannot be a Windows device name (con, prn, aux, nul, com1–9, lpt1–9)');

export const RegisterAgentBody = z
  .strictObject({
    id: AgentId.describe('The exact Agent identity graphs name as planner, reviewer or implementer; never trimmed'),
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

export const AgentList = z
  .object({ agents: z.array(Agent), nextCursor: z.string().nullable() })
  .meta({ id: 'AgentList' });

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
 * messages are the contract's (seeds-notes §3.2, §3.5), never zod's.
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
    evidence: z.unknown().describe('Execution evidence (later issue); null until then'),
    todoId: z.string().describe('The engine row of this subtask in scope `graph:<parentTaskId>`'),
    todoStatus: z.enum(['todo', 'in-progress', 'done', 'blocked']).describe('The engine row’s effective status'),
    updatedAt: Timestamp,
  })
  .meta({ id: 'TaskGraphSubtaskRecord' });

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
    state: TaskGraphStateSchema.describe('Derived from the subtask states (seeds-notes §3.3)'),
    status: TaskGraphStateSchema.describe('Always equal to `state`'),
    reason: z.string().nullable(),
    evidence: z.unknown(),
    maxConcurrency: z.number().int().min(1).max(32),
    subtasks: z.array(TaskGraphSubtaskRecord).describe('Sorted by id in byte order'),
    frontier: TaskGraphFrontierSchema,
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
    event: z.string().describe('`TASK_GRAPH_CREATED`, later `TASK_GRAPH_SUBTASK_STATE_CHANGED`, `TASK_GRAPH_STATUS_CHANGED`'),
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
