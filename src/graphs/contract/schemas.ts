/**
 * zod 4 schemas for documenting the Task Graph v1 contract in OpenAPI and for
 * typing responses (seed 002; docs/seeds/task-graph-v1.md §1–§6; docs/architecture.md §D5, §D9).
 *
 * These schemas describe shapes; they do not replace the hand-written
 * validators. A route that accepts a graph or an Intent Map must run
 * `validateTaskGraph` / `validateIntentMap` on the raw body so that the
 * contract's fixed check order and exact messages are kept: zod reports all
 * issues at once, in its own order. Document such a body with `TaskGraphV1`
 * but parse it as `unknown`.
 *
 * Input documents are strict objects (unknown keys are refused by the
 * contract); outputs are plain objects. Component ids are registered with
 * `.meta({ id })` so OpenAPI gets stable names.
 */
import { z } from 'zod';
import { AGENT_ID_PATTERN, RESERVED_DEVICE_NAMES, SUBTASK_ID_PATTERN, TASK_ID_PATTERN } from './ids.js';

const SubtaskIdSchema = z
  .string()
  .regex(SUBTASK_ID_PATTERN)
  .describe('Subtask id: 1–64 of [a-z0-9_-], starting with a lowercase letter; not a Windows device name; never trimmed.');

/**
 * Agent id, the one definition (the agents registry's body and every Agent a graph names): the
 * contract's format, and not a Windows device name — the rule of `isAgentId` (ids.ts).
 */
export const AgentIdSchema = z
  .string()
  .regex(AGENT_ID_PATTERN, 'an Agent id is 1–64 of [a-z0-9_-] starting with a lowercase letter')
  .refine((id) => !RESERVED_DEVICE_NAMES.has(id), 'an Agent id cannot be a Windows device name (con, prn, aux, nul, com1–9, lpt1–9)')
  .describe('Configured Agent id: 1–64 of [a-z0-9_-], starting with a lowercase letter; not a Windows device name.');

const TaskIdSchema = z.string().regex(TASK_ID_PATTERN).describe('Parent Task id: "task-" + one alphanumeric + 1–127 of [A-Za-z0-9_-].');

export const SubtaskStateSchema = z
  .enum(['PENDING', 'READY', 'WAITING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'BLOCKED', 'STOPPED'])
  .meta({ id: 'TaskGraphSubtaskState' });

export const TaskGraphStateSchema = z.enum(['CREATED', 'RUNNING', 'REVIEWING', 'APPROVED', 'ERROR', 'STOPPED']).meta({ id: 'TaskGraphState' });

export const ScopePolicySchema = z.enum(['observe', 'warn', 'strict']).meta({ id: 'IntentMapScopePolicy' });

const SPEC_MAX = 256 * 1024;

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/** The Task Graph v1 input document (seed 002 "Input"). */
export const TaskGraphV1Schema = z
  .strictObject({
    schemaVersion: z.literal(1),
    parentTask: z.strictObject({
      id: TaskIdSchema,
      title: z.string().min(1).max(1024).describe('Non-empty after trim; ≤ 1024 characters after trim.'),
      planner: AgentIdSchema,
      reviewer: AgentIdSchema,
      spec: z.string().min(1).max(SPEC_MAX).optional().describe('Optional; non-empty; ≤ 256 KiB (characters and UTF-8 bytes).'),
      implementer: AgentIdSchema.optional(),
    }),
    subtasks: z
      .array(
        z.strictObject({
          id: SubtaskIdSchema,
          implementer: AgentIdSchema.describe('Exact configured Implementer; never inferred from an executable.'),
          spec: z.string().min(1).max(SPEC_MAX).describe('Non-empty; ≤ 256 KiB (characters and UTF-8 bytes).'),
          title: z.string().min(1).max(1024).optional(),
          dependsOn: z
            .array(SubtaskIdSchema)
            .optional()
            .describe('Ids of subtasks in the same graph. Duplicate edges and self edges are rejected; the graph must be acyclic.'),
        }),
      )
      .min(1)
      .max(256),
    maxConcurrency: z.int().min(1).max(32),
  })
  .meta({
    id: 'TaskGraphV1',
    description: 'Task Graph v1 input. Validated by the server in a fixed order; failures are TASK_GRAPH_INVALID with stage graph-validation.',
  });

/** The optional Intent Map v1 companion (seed 002 "Optional Intent Map v1 companion"). */
export const IntentMapV1Schema = z
  .strictObject({
    schemaVersion: z.literal(1),
    parentTaskId: TaskIdSchema,
    scopePolicy: ScopePolicySchema.optional().describe('Defaults to warn.'),
    subtasks: z
      .array(
        z.strictObject({
          id: SubtaskIdSchema,
          writeIntent: z.array(z.string().min(1).max(4096)).max(4096).describe('Repository-relative path/glob patterns; [] is explicit-empty coverage.'),
        }),
      )
      .describe('Every graph subtask exactly once.'),
  })
  .meta({
    id: 'IntentMapV1',
    description: 'Intent Map v1 (≤ 1 MiB, ≤ 4096 patterns, each ≤ 4096 UTF-8 bytes). Failures are TASK_GRAPH_INVALID with stage intent-map-validation.',
  });

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

export const TaskGraphInvalidSchema = z
  .object({
    code: z.literal('TASK_GRAPH_INVALID'),
    stage: z.enum(['graph-validation', 'intent-map-validation']),
    message: z.string().max(2048),
    recoverable: z.literal(false),
    taskId: z.string().nullable(),
    details: z.object({
      parentTaskId: z.string().nullable(),
      subtaskId: z.string().max(128).nullable(),
      agent: z.string().max(128).optional(),
    }),
  })
  .meta({ id: 'TaskGraphInvalidError' });

export const WriteIntentConflictSchema = z
  .object({
    code: z.literal('WRITE_INTENT_CONFLICT'),
    subtasks: z.tuple([SubtaskIdSchema, SubtaskIdSchema]),
    patterns: z.tuple([
      z.object({ subtaskId: SubtaskIdSchema, pattern: z.string().min(1).max(4096) }),
      z.object({ subtaskId: SubtaskIdSchema, pattern: z.string().min(1).max(4096) }),
    ]),
    conservative: z.boolean(),
  })
  .meta({ id: 'WriteIntentConflict' });

export const TaskGraphSchedulingErrorSchema = z
  .object({
    code: z.enum(['TASK_STATE_CONFLICT', 'TASK_ALREADY_RUNNING', 'TASK_NOT_FOUND', 'INVALID_AGENT_CONFIG']),
    stage: z.literal('graph-scheduling'),
    message: z.string().max(2048),
    recoverable: z.boolean(),
    taskId: z.string().nullable(),
    details: z.object({
      parentTaskId: z.string().nullable(),
      subtaskId: z.string().nullable(),
      agent: z.string().optional(),
      conflict: WriteIntentConflictSchema.optional(),
    }),
  })
  .meta({ id: 'TaskGraphSchedulingError' });

// ---------------------------------------------------------------------------
// Normalised results
// ---------------------------------------------------------------------------

export const NormalizedTaskGraphSchema = z
  .object({
    schemaVersion: z.literal(1),
    kind: z.literal('task-graph'),
    parentTaskId: TaskIdSchema,
    state: z.literal('CREATED'),
    parentTask: z.object({
      id: TaskIdSchema,
      title: z.string(),
      planner: AgentIdSchema,
      reviewer: AgentIdSchema,
      spec: z.string().optional(),
      implementer: AgentIdSchema.optional(),
    }),
    maxConcurrency: z.int().min(1).max(32),
    subtasks: z.array(
      z.object({
        id: SubtaskIdSchema,
        parentTaskId: TaskIdSchema,
        title: z.string().optional(),
        implementer: AgentIdSchema,
        spec: z.string(),
        dependsOn: z.array(SubtaskIdSchema),
        state: z.literal('PENDING'),
      }),
    ),
    facts: z.object({
      parent: z.object({
        kind: z.literal('parent-task'),
        taskId: TaskIdSchema,
        planner: AgentIdSchema,
        implementer: AgentIdSchema.optional(),
        reviewer: AgentIdSchema,
        state: z.literal('CREATED'),
        status: z.literal('CREATED'),
        maxConcurrency: z.int().min(1).max(32),
      }),
      subtasks: z.array(
        z.object({
          kind: z.literal('subtask'),
          parentTaskId: TaskIdSchema,
          subtaskId: SubtaskIdSchema,
          implementer: AgentIdSchema,
          state: z.literal('PENDING'),
          status: z.literal('PENDING'),
          dependsOn: z.array(SubtaskIdSchema),
        }),
      ),
    }),
  })
  .meta({ id: 'TaskGraphNormalized', description: 'A validated Task Graph v1: subtasks and dependsOn sorted by id.' });

export const NormalizedIntentMapSchema = z
  .object({
    schemaVersion: z.literal(1),
    parentTaskId: TaskIdSchema,
    scopePolicy: ScopePolicySchema,
    subtasks: z.array(z.object({ id: SubtaskIdSchema, writeIntent: z.array(z.string().min(1)) })),
  })
  .meta({ id: 'IntentMapNormalized', description: 'Normalised Intent Map: declarations by id, patterns sorted.' });

export const IntentCoverageSchema = z
  .object({
    available: z.boolean(),
    schemaVersion: z.literal(1).nullable(),
    scopePolicy: ScopePolicySchema.nullable(),
    subtasks: z.array(
      z.object({
        subtaskId: SubtaskIdSchema,
        coverage: z.enum(['unavailable', 'explicit-empty', 'declared']),
        writeIntent: z.array(z.string().min(1)).nullable(),
      }),
    ),
  })
  .meta({ id: 'IntentCoverage' });

// ---------------------------------------------------------------------------
// Frontier and plan
// ---------------------------------------------------------------------------

const SubtaskIdListSchema = z.array(SubtaskIdSchema);

export const TaskGraphFrontierSchema = z
  .object({
    ready: SubtaskIdListSchema,
    waiting: SubtaskIdListSchema,
    blocked: SubtaskIdListSchema,
    running: SubtaskIdListSchema,
    succeeded: SubtaskIdListSchema,
    failed: SubtaskIdListSchema,
    stopped: SubtaskIdListSchema,
    eligible: SubtaskIdListSchema,
    capacityLimited: SubtaskIdListSchema,
    maxConcurrency: z.int().min(1).max(32),
    runningCount: z.int().min(0),
    availableSlots: z.int().min(0),
    reasons: z.record(z.string(), z.string().nullable()),
  })
  .meta({
    id: 'TaskGraphFrontier',
    description: 'Deterministic frontier; every list sorted by id in byte order.',
  });

const DependencyStateSchema = z.object({
  id: SubtaskIdSchema,
  state: z.union([SubtaskStateSchema, z.literal('MISSING')]),
});

export const DerivedSubtaskStateSchema = z
  .object({
    id: SubtaskIdSchema,
    state: SubtaskStateSchema,
    reason: z.string().nullable(),
    derived: z.boolean(),
    changed: z.boolean(),
    dependencies: z.array(DependencyStateSchema),
  })
  .meta({ id: 'TaskGraphDerivedSubtaskState' });

export const PlanDecisionSchema = z
  .object({
    subtaskId: SubtaskIdSchema,
    implementer: AgentIdSchema,
    state: SubtaskStateSchema,
    decision: z.enum([
      'ELIGIBLE',
      'CAPACITY_LIMITED',
      'WRITE_INTENT_CONFLICT',
      'PENDING',
      'READY',
      'WAITING',
      'RUNNING',
      'SUCCEEDED',
      'FAILED',
      'BLOCKED',
      'STOPPED',
    ]),
    reason: z.string().min(1).max(2048),
    dependencies: z.array(DependencyStateSchema),
    agent: z.object({
      id: AgentIdSchema,
      registered: z.boolean().nullable().describe('null when no agents registry was consulted.'),
      adapter: z.string().nullable(),
      command: z.string().nullable(),
      commandSource: z.enum(['project', 'user', 'adapter-default']).nullable(),
    }),
    conflict: WriteIntentConflictSchema.optional(),
  })
  .meta({ id: 'TaskGraphPlanDecision' });

export const TaskGraphWaveSchema = z
  .object({
    schemaVersion: z.literal(1),
    deterministic: z.literal(true),
    intentCoverageAvailable: z.boolean(),
    selected: SubtaskIdListSchema.max(32),
    conflictDeferred: SubtaskIdListSchema.max(256),
    capacityLimited: SubtaskIdListSchema.max(256),
    conflicts: z.array(WriteIntentConflictSchema).max(256),
    reasons: z.record(z.string(), z.string().max(2048)),
  })
  .meta({ id: 'TaskGraphWave' });

export const GraphPreflightSchema = z
  .object({
    schemaVersion: z.literal(1),
    deterministic: z.literal(true),
    sideEffects: z.literal(false),
    scopePolicy: ScopePolicySchema.nullable(),
    concurrentWriteSafety: z.enum(['UNVERIFIED', 'DECLARED_NON_CONFLICTING']),
    estimates: z.object({
      basis: z.literal('current-selected-wave'),
      selectedSubtaskCount: z.int().min(0),
      worktreeCount: z.int().min(0),
      branchCount: z.int().min(0),
      busMessageCount: z.int().min(0),
      sessionCount: z.int().min(0),
      processCount: z.int().min(0),
    }),
    risks: z
      .array(
        z.object({
          code: z.enum(['INTENT_COVERAGE_UNAVAILABLE', 'WRITE_INTENT_CONFLICT', 'CAPACITY_LIMITED']),
          severity: z.enum(['warning', 'info']),
          affectedSubtasks: SubtaskIdListSchema,
          message: z.string().max(2048),
        }),
      )
      .max(3),
    boundaries: z.object({
      changesDependencies: z.literal(false),
      dispatchesAgents: z.literal(false),
      authorizesReview: z.literal(false),
      authorizesRelease: z.literal(false),
      requiresExplicitGraphRun: z.literal(true),
      releaseApproval: z.literal('RELEASE_APPROVED'),
    }),
  })
  .meta({ id: 'TaskGraphPreflight' });

export const TaskGraphPlanSchema = z
  .object({
    schemaVersion: z.literal(1),
    deterministic: z.literal(true),
    sideEffects: z.literal(false),
    parentTaskId: TaskIdSchema,
    maxConcurrency: z.int().min(1).max(32),
    runningCount: z.int().min(0),
    availableSlots: z.int().min(0),
    eligible: z.array(PlanDecisionSchema),
    capacityLimited: z.array(PlanDecisionSchema),
    conflictDeferred: z.array(PlanDecisionSchema),
    conflicts: z.array(WriteIntentConflictSchema).max(256),
    wave: TaskGraphWaveSchema,
    decisions: z.array(PlanDecisionSchema).min(1).max(256),
    intentCoverage: IntentCoverageSchema,
    preflight: GraphPreflightSchema,
    frontier: TaskGraphFrontierSchema,
  })
  .meta({
    id: 'TaskGraphPlan',
    description: 'Read-only Graph Preflight: one deterministic, conflict-aware READY wave and a decision for every subtask.',
  });
