/**
 * Task Graph v1 + Intent Map v1 contract types.
 *
 * These are the exact JSON shapes of the coordinate-agents contract (seed 002;
 * docs/seeds/task-graph-v1.md §1–§6). Task Graph v1 JSON keeps its contract names verbatim
 * (docs/architecture.md §D9): `subtask`, `dependsOn`, `implementer`, `maxConcurrency`,
 * `frontier`, `wave`, `writeIntent`, `scopePolicy`.
 *
 * Everything here is plain data: no class instances, so values survive
 * `JSON.stringify` and deep equality unchanged.
 */
import type { z } from 'zod';
import type { ScopePolicySchema, SubtaskStateSchema, TaskGraphFrontierSchema, TaskGraphStateSchema, TaskGraphV1Schema } from './schemas.js';

/** Graph (parent) states (seed 002): the values of {@link TaskGraphStateSchema}. */
export type TaskGraphState = z.output<typeof TaskGraphStateSchema>;

/** Subtask states (seed 002): the values of {@link SubtaskStateSchema}. PENDING/READY/WAITING are always re-derived. */
export type SubtaskState = z.output<typeof SubtaskStateSchema>;

/** Intent Map scope policies (seed 002): the values of {@link ScopePolicySchema}. */
export type ScopePolicy = z.output<typeof ScopePolicySchema>;

export type ValidationStage = 'graph-validation' | 'intent-map-validation';

/** Bounded, JSON-safe error details. Echoed identifiers are at most 128 characters. */
export interface TaskGraphInvalidDetails {
  parentTaskId: string | null;
  subtaskId: string | null;
  /** The Agent identity implicated by a configured-agent failure, when there is one. */
  agent?: string;
}

/**
 * The stable, non-recoverable `TASK_GRAPH_INVALID` runtime error (docs/seeds/task-graph-v1.md §2, §12).
 * `message` has control characters replaced by spaces and is at most 2048 characters.
 */
export interface TaskGraphInvalid {
  code: 'TASK_GRAPH_INVALID';
  stage: ValidationStage;
  message: string;
  recoverable: false;
  /** The parent Task id once it is known to be well formed, else null. */
  taskId: string | null;
  details: TaskGraphInvalidDetails;
}

export type ContractResult<T, E> = { ok: true; value: T } | { ok: false; error: E };

// ---------------------------------------------------------------------------
// Task Graph v1 input (seed 002 "Input"; docs/seeds/task-graph-v1.md §1)
// ---------------------------------------------------------------------------

/** The normalised Task Graph v1 document: the output of {@link TaskGraphV1Schema}, its one definition. */
export type TaskGraphV1Input = z.output<typeof TaskGraphV1Schema>;

/** Configured Agent membership: a Set or array of ids or `{ id }` records, or `{ agents: [...] }` (docs/seeds/task-graph-v1.md §2 step 12). */
export type ConfiguredAgents =
  | ReadonlySet<string>
  | ReadonlyArray<string | { readonly id: string }>
  | { readonly agents: ReadonlyArray<string | { readonly id: string }> };

export interface ValidateTaskGraphContext {
  configuredAgents: ConfiguredAgents;
}

// ---------------------------------------------------------------------------
// Normalised graph (docs/seeds/task-graph-v1.md §2 "Output" + durable facts view)
// ---------------------------------------------------------------------------

export interface NormalizedParentTask {
  readonly id: string;
  readonly title: string;
  readonly planner: string;
  readonly reviewer: string;
  readonly spec?: string;
  readonly implementer?: string;
}

export interface NormalizedSubtask {
  readonly id: string;
  readonly parentTaskId: string;
  readonly title?: string;
  readonly implementer: string;
  readonly spec: string;
  /** Sorted in byte order. */
  readonly dependsOn: readonly string[];
  readonly state: 'PENDING';
}

export interface ParentTaskFacts {
  readonly kind: 'parent-task';
  readonly taskId: string;
  readonly planner: string;
  readonly implementer?: string;
  readonly reviewer: string;
  readonly state: 'CREATED';
  readonly status: 'CREATED';
  readonly maxConcurrency: number;
}

export interface SubtaskFacts {
  readonly kind: 'subtask';
  readonly parentTaskId: string;
  readonly subtaskId: string;
  readonly implementer: string;
  readonly state: 'PENDING';
  readonly status: 'PENDING';
  readonly dependsOn: readonly string[];
}

export interface TaskGraphFacts {
  readonly parent: ParentTaskFacts;
  readonly subtasks: readonly SubtaskFacts[];
}

/** A validated, deep-frozen Task Graph v1. Subtasks are sorted by id (byte order). */
export interface NormalizedGraph {
  readonly schemaVersion: 1;
  readonly kind: 'task-graph';
  readonly parentTaskId: string;
  readonly state: 'CREATED';
  readonly parentTask: NormalizedParentTask;
  readonly maxConcurrency: number;
  readonly subtasks: readonly NormalizedSubtask[];
  /** Durable facts view: parent identity distinct from every subtask identity. */
  readonly facts: TaskGraphFacts;
}

export type ValidateTaskGraphResult = ContractResult<NormalizedGraph, TaskGraphInvalid>;

// ---------------------------------------------------------------------------
// Intent Map v1 (seed 002 "Optional Intent Map v1 companion"; docs/seeds/task-graph-v1.md §5)
// ---------------------------------------------------------------------------

export interface IntentMapV1Input {
  schemaVersion: 1;
  parentTaskId: string;
  scopePolicy?: ScopePolicy;
  subtasks: Array<{ id: string; writeIntent: string[] }>;
}

export interface NormalizedIntentDeclaration {
  readonly id: string;
  /** Normalised patterns, sorted in byte order. `[]` is explicit-empty coverage. */
  readonly writeIntent: readonly string[];
}

/** A validated, deep-frozen Intent Map. Declarations are sorted by id. */
export interface NormalizedIntentMap {
  readonly schemaVersion: 1;
  readonly parentTaskId: string;
  readonly scopePolicy: ScopePolicy;
  readonly subtasks: readonly NormalizedIntentDeclaration[];
}

/** The graph facts Intent Map validation needs (a NormalizedGraph satisfies it). */
export interface IntentMapGraphContext {
  readonly parentTaskId: string;
  readonly subtasks: ReadonlyArray<{ readonly id: string }>;
}

/** `value: null` means no companion map was supplied (legacy coverage-unavailable graph). */
export type ValidateIntentMapResult = ContractResult<NormalizedIntentMap | null, TaskGraphInvalid>;

export interface IntentCoverageSubtask {
  subtaskId: string;
  coverage: 'unavailable' | 'explicit-empty' | 'declared';
  writeIntent: string[] | null;
}

export interface IntentCoverage {
  available: boolean;
  schemaVersion: 1 | null;
  scopePolicy: ScopePolicy | null;
  subtasks: IntentCoverageSubtask[];
}

export interface WriteIntentConflict {
  code: 'WRITE_INTENT_CONFLICT';
  /** `[lower id, higher id]` in byte order. */
  subtasks: [string, string];
  /** The first overlapping normalised pattern pair, in the same order as `subtasks`. */
  patterns: [{ subtaskId: string; pattern: string }, { subtaskId: string; pattern: string }];
  /** True when the patterns are not identical (overlap is assumed, not proven). */
  conservative: boolean;
}

// ---------------------------------------------------------------------------
// Frontier (docs/seeds/task-graph-v1.md §3)
// ---------------------------------------------------------------------------

/** One subtask as stored: its state plus whether a BLOCKED state was set explicitly. */
export interface StoredSubtaskState {
  readonly id: string;
  readonly dependsOn: readonly string[];
  readonly state: SubtaskState;
  readonly reason?: string | null;
  /**
   * Only meaningful for BLOCKED. A dependency-derived BLOCKED (the default) is
   * re-derived on every read, so it returns to WAITING/READY once the failed
   * prerequisite is explicitly resumed; an explicit BLOCKED is preserved.
   */
  readonly blockedExplicitly?: boolean;
}

export interface DependencyState {
  id: string;
  /** `MISSING` only when the snapshot references an id it does not contain. */
  state: SubtaskState | 'MISSING';
}

export interface DerivedSubtaskState {
  id: string;
  state: SubtaskState;
  reason: string | null;
  /** True when `state` was computed from dependency facts rather than taken as stored. */
  derived: boolean;
  /** True when `state` or `reason` differs from the stored value (a durable write is due). */
  changed: boolean;
  dependencies: DependencyState[];
}

/**
 * The frontier (every list in byte order; `eligible` the first `availableSlots` of `ready`,
 * `capacityLimited` the rest; `reasons` subtask id → bounded reason or null): the type of
 * {@link TaskGraphFrontierSchema}.
 */
export type TaskGraphFrontier = z.output<typeof TaskGraphFrontierSchema>;

export interface FrontierInput {
  readonly maxConcurrency: number;
  readonly subtasks: readonly StoredSubtaskState[];
}

export interface FrontierDerivation {
  /** Every subtask, sorted by id, with its derived state. */
  subtasks: DerivedSubtaskState[];
  frontier: TaskGraphFrontier;
}

// ---------------------------------------------------------------------------
// Graph Preflight / plan (docs/seeds/task-graph-v1.md §5 wave, docs/seeds/task-graph-v1.md §6 plan)
// ---------------------------------------------------------------------------

/** An agents-registry record as Coord stores it; adapter and command facts are optional. */
export interface AgentRegistryRecord {
  readonly id: string;
  readonly adapter?: string | null;
  readonly command?: string | null;
  readonly commandSource?: 'project' | 'user' | 'adapter-default' | null;
}

export interface PlanSubtaskSnapshot extends StoredSubtaskState {
  readonly implementer: string;
}

/** One consistent graph snapshot read under the graph lock. */
export interface GraphSnapshot {
  readonly parentTaskId: string;
  readonly maxConcurrency: number;
  readonly subtasks: readonly PlanSubtaskSnapshot[];
  /** The persisted normalised Intent Map; null/absent for a legacy graph. */
  readonly intentMap?: NormalizedIntentMap | null;
  /**
   * The agents registry. When supplied, every implementer must be registered
   * (no fallback Agent is ever selected). When absent, agent facts are reported
   * as unresolved (`registered: null`).
   */
  readonly agents?: readonly AgentRegistryRecord[];
}

export interface PlanAgentFacts {
  id: string;
  registered: boolean | null;
  adapter: string | null;
  command: string | null;
  commandSource: 'project' | 'user' | 'adapter-default' | null;
}

export type PlanDecisionKind = 'ELIGIBLE' | 'CAPACITY_LIMITED' | 'WRITE_INTENT_CONFLICT' | SubtaskState;

export interface PlanDecision {
  subtaskId: string;
  implementer: string;
  state: SubtaskState;
  decision: PlanDecisionKind;
  /** 1–2048 characters, control characters replaced by spaces. */
  reason: string;
  dependencies: DependencyState[];
  agent: PlanAgentFacts;
  conflict?: WriteIntentConflict;
}

export interface TaskGraphWave {
  schemaVersion: 1;
  deterministic: true;
  intentCoverageAvailable: boolean;
  selected: string[];
  conflictDeferred: string[];
  capacityLimited: string[];
  conflicts: WriteIntentConflict[];
  /** Reasons for deferred and capacity-limited subtasks, ≤ 2048 characters each. */
  reasons: Record<string, string>;
}

export interface PreflightRisk {
  code: 'INTENT_COVERAGE_UNAVAILABLE' | 'WRITE_INTENT_CONFLICT' | 'CAPACITY_LIMITED';
  severity: 'warning' | 'info';
  affectedSubtasks: string[];
  message: string;
}

export interface GraphPreflight {
  schemaVersion: 1;
  deterministic: true;
  sideEffects: false;
  scopePolicy: ScopePolicy | null;
  concurrentWriteSafety: 'UNVERIFIED' | 'DECLARED_NON_CONFLICTING';
  estimates: {
    basis: 'current-selected-wave';
    selectedSubtaskCount: number;
    worktreeCount: number;
    branchCount: number;
    busMessageCount: number;
    sessionCount: number;
    processCount: number;
  };
  /** At most three bounded risk summaries. */
  risks: PreflightRisk[];
  boundaries: {
    changesDependencies: false;
    dispatchesAgents: false;
    authorizesReview: false;
    authorizesRelease: false;
    requiresExplicitGraphRun: true;
    releaseApproval: 'RELEASE_APPROVED';
  };
}

export interface TaskGraphPlan {
  schemaVersion: 1;
  deterministic: true;
  sideEffects: false;
  parentTaskId: string;
  maxConcurrency: number;
  runningCount: number;
  availableSlots: number;
  eligible: PlanDecision[];
  capacityLimited: PlanDecision[];
  conflictDeferred: PlanDecision[];
  conflicts: WriteIntentConflict[];
  wave: TaskGraphWave;
  /** Every subtask, sorted by id. */
  decisions: PlanDecision[];
  intentCoverage: IntentCoverage;
  preflight: GraphPreflight;
  /** The dependency/capacity frontier the wave was derived from. */
  frontier: TaskGraphFrontier;
}

/**
 * A scheduling refusal at stage `graph-scheduling` (docs/seeds/task-graph-v1.md §3, §6, §7):
 * a contradictory or incomplete snapshot (never repaired), a missing registry
 * fact, or a claim guard that no longer holds under the graph lock.
 */
export interface TaskGraphSchedulingError {
  code: 'TASK_STATE_CONFLICT' | 'TASK_ALREADY_RUNNING' | 'TASK_NOT_FOUND' | 'INVALID_AGENT_CONFIG';
  stage: 'graph-scheduling';
  /** ≤ 2048 characters, control characters replaced. */
  message: string;
  recoverable: boolean;
  taskId: string | null;
  details: {
    parentTaskId: string | null;
    subtaskId: string | null;
    agent?: string;
    /** Set when a claim is refused because of a RUNNING subtask's write intent. */
    conflict?: WriteIntentConflict;
  };
}

export type PlanGraphResult = ContractResult<TaskGraphPlan, TaskGraphSchedulingError>;

/** What a successful locked claim check proves. */
export interface SubtaskClaimCheck {
  parentTaskId: string;
  subtaskId: string;
  implementer: string;
  /** RUNNING subtasks before this claim. */
  runningCount: number;
  /** Free slots before this claim (≥ 1 on success). */
  availableSlots: number;
}

export type SubtaskClaimResult = ContractResult<SubtaskClaimCheck, TaskGraphSchedulingError>;
