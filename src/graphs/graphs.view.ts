/**
 * How stored graph rows read as the Task Graph v1 record (seed 002 "Durable graph create, status,
 * and inspect"; docs/seeds/task-graph-v1.md §3). The contract state of a subtask is a VIEW over the engine row
 * plus the contract outcome stored beside it (docs/architecture.md §D1):
 *
 * | `graph_subtasks.outcome` | todo stored status            | contract state (before derivation) |
 * | ------------------------ | ----------------------------- | ---------------------------------- |
 * | `FAILED` / `STOPPED`     | `blocked` (owner kept)        | FAILED / STOPPED, with `reason`    |
 * | `BLOCKED`                | `blocked`                     | BLOCKED, explicit (kept)           |
 * | null                     | `done`                        | SUCCEEDED                          |
 * | null                     | `in-progress`                 | RUNNING                            |
 * | null                     | `blocked` (manual, no outcome)| BLOCKED, explicit, reason = note   |
 * | null                     | `todo`, unfinished deps = 0   | READY                              |
 * | null                     | `todo`, unfinished deps > 0   | WAITING                            |
 *
 * READY / WAITING and dependency-derived BLOCKED are then re-derived from the contract's
 * `dependsOn` facts by `deriveFrontier` on every read, so a FAILED/BLOCKED/STOPPED prerequisite
 * blocks its dependents and readiness never drifts. Pure: no I/O here.
 */
import type { StoredStatus } from '../todos/todos.view.js';
import { effectiveStatus } from '../todos/todos.view.js';
import {
  deriveFrontier,
  deriveParentState,
  intentCoverageFacts,
  type NormalizedIntentMap,
  type NormalizedParentTask,
  type PlanSubtaskSnapshot,
  type SubtaskState,
  type TaskGraphFrontier,
  type TaskGraphState,
} from './contract/index.js';
import { classifyRecovery, runtimeWorktree } from './contract/execution.js';
import { compareByteOrder } from './contract/text.js';

/** The contract's deep-frozen values typed as the plain (mutable) JSON the wire schemas describe. */
export type DeepMutable<T> = T extends readonly (infer U)[] ? DeepMutable<U>[] : T extends object ? { -readonly [K in keyof T]: DeepMutable<T[K]> } : T;
export const mutable = <T>(value: T): DeepMutable<T> => value as DeepMutable<T>;

/** The normalised parent task as stored in `graphs.parent`, plus its durable lifecycle state. */
export interface StoredParent extends NormalizedParentTask {
  /**
   * The last durable parent state (CREATED at create). The shown state is derived from it and the
   * subtask states (`deriveParentState`); every execution write (execution/locked.ts) persists it.
   */
  state?: TaskGraphState;
  reason?: string | null;
  evidence?: unknown;
}

/** A `graphs` row as read by the repository. */
export interface GraphRow {
  /** The graph's team: graph ids are unique per team. */
  team_id: string;
  id: string;
  scope: string;
  parent: StoredParent;
  max_concurrency: number;
  intent_map: NormalizedIntentMap | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  revision: number;
  /** Execution records (null before the first run / integration / review). */
  base_commit?: string | null;
  integration?: unknown;
  review?: unknown;
  /** The subtree root of the creating session (null when a user created the graph). */
  creator_root?: string | null;
}

/** Why a RUNNING subtask is stranded: its session stopped, or its claim lease expired. */
export type Interruption = 'session-stopped' | 'lease-expired';

/** A `graph_subtasks` row joined with its engine (`todos`) row. `spec` is absent in summaries. */
export interface SubtaskRow {
  subtask_id: string;
  todo_id: string;
  implementer: string;
  title: string | null;
  spec?: string;
  depends_on: string[];
  outcome: string | null;
  reason: unknown;
  evidence: unknown;
  updated_at: Date;
  status: StoredStatus;
  unfinished_deps: number;
  note: string | null;
  /** Execution facts (graphs.repo.ts reads them; summaries and create leave them out). */
  owner?: string | null;
  todo_revision?: number;
  attempt?: number;
  session_id?: string | null;
  session_status?: string | null;
  dispatched_by?: string | null;
  dispatched_at?: Date | null;
  implementation_commit?: string | null;
  scope_evidence?: unknown;
  last_error?: unknown;
  cleanup?: unknown;
  lease_expires_at?: Date | null;
  /** Set when the todo row is in progress but its session stopped or its lease expired. */
  interrupted?: Interruption | null;
}

/** The FAILED reason of an interrupted RUNNING subtask (docs/architecture.md §D8; docs/seeds/task-graph-v1.md §10). */
export function interruptedReason(why: Interruption): string {
  return why === 'session-stopped'
    ? 'Interrupted: the subtask session stopped while the subtask was RUNNING; resume it to dispatch again.'
    : 'Interrupted: the claim lease expired without progress (heartbeat) from the subtask session; resume it to dispatch again.';
}

/** A bounded reason stored as jsonb: a string, or an object with a `message`. */
function reasonText(reason: unknown): string | null {
  if (typeof reason === 'string') return reason;
  if (reason !== null && typeof reason === 'object' && typeof (reason as { message?: unknown }).message === 'string') {
    return (reason as { message: string }).message;
  }
  return null;
}

/**
 * The contract's stored state of one subtask (the table in this file's header). A RUNNING
 * subtask whose session stopped or whose lease expired reads FAILED with an `Interrupted: …`
 * reason at once, before the write that records it (docs/architecture.md §D3, §D8); `durable: true` reads
 * the stored state only (what the recording write diffs against).
 */
export function storedSubtask(row: SubtaskRow, durable = false): PlanSubtaskSnapshot {
  const base = { id: row.subtask_id, implementer: row.implementer, dependsOn: [...row.depends_on] };
  const reason = reasonText(row.reason);
  if (!durable && row.outcome === null && row.status === 'in-progress' && row.interrupted) {
    return { ...base, state: 'FAILED', reason: interruptedReason(row.interrupted) };
  }
  switch (row.outcome) {
    case 'FAILED':
    case 'STOPPED':
      return { ...base, state: row.outcome, reason };
    case 'BLOCKED':
      return { ...base, state: 'BLOCKED', reason, blockedExplicitly: true };
  }
  let state: SubtaskState;
  switch (row.status) {
    case 'done':
      state = 'SUCCEEDED';
      break;
    case 'in-progress':
      state = 'RUNNING';
      break;
    case 'blocked':
      return { ...base, state: 'BLOCKED', reason: reason ?? row.note, blockedExplicitly: true };
    default:
      state = row.unfinished_deps > 0 ? 'WAITING' : 'READY';
  }
  return { ...base, state, reason };
}

/** Stored subtasks in byte order of id (the order every contract list uses). */
export function storedSubtasks(rows: readonly SubtaskRow[], durable = false): PlanSubtaskSnapshot[] {
  return rows.map((row) => storedSubtask(row, durable)).sort((left, right) => compareByteOrder(left.id, right.id));
}

export interface DerivedGraph {
  state: TaskGraphState;
  frontier: TaskGraphFrontier;
  /** Derived state and reason per subtask id. */
  subtasks: Map<string, { state: SubtaskState; reason: string | null }>;
}

/** Derives subtask states, the frontier and the parent state from stored rows (docs/seeds/task-graph-v1.md §3). */
export function deriveGraph(graph: Pick<GraphRow, 'parent' | 'max_concurrency'>, rows: readonly SubtaskRow[], durable = false): DerivedGraph {
  const { subtasks, frontier } = deriveFrontier({ maxConcurrency: graph.max_concurrency, subtasks: storedSubtasks(rows, durable) });
  const state = deriveParentState(
    graph.parent.state ?? 'CREATED',
    subtasks.map((subtask) => subtask.state),
  );
  return { state, frontier, subtasks: new Map(subtasks.map((subtask) => [subtask.id, { state: subtask.state, reason: subtask.reason }])) };
}

/** The dispatch facts of a subtask: its session, worktree, branch and lease (null before a dispatch). */
function dispatchFacts(graphId: string, row: SubtaskRow) {
  const dispatched = (row.attempt ?? 0) > 0;
  const w = runtimeWorktree(graphId, row.subtask_id);
  return {
    sessionId: row.session_id ?? null,
    dispatchedBy: row.dispatched_by ?? null,
    dispatchedAt: row.dispatched_at ? row.dispatched_at.toISOString() : null,
    worktreePath: dispatched ? w.path : null,
    branch: dispatched ? w.branch : null,
    ref: dispatched ? w.ref : null,
    leaseExpiresAt: row.lease_expires_at ? row.lease_expires_at.toISOString() : null,
  };
}

/** The wire record (`TaskGraphRecord` in graphs.schemas.ts) of a graph and its subtask rows. */
export function toRecord(graph: GraphRow, rows: readonly SubtaskRow[]) {
  const derived = deriveGraph(graph, rows);
  const parent = graph.parent;
  const createdAt = graph.created_at.toISOString();
  const updatedAt = graph.updated_at.toISOString();
  const ordered = [...rows].sort((left, right) => compareByteOrder(left.subtask_id, right.subtask_id));
  return {
    schemaVersion: 1 as const,
    kind: 'task-graph' as const,
    id: graph.id,
    parentTaskId: graph.id,
    scope: graph.scope,
    parentTask: {
      id: parent.id,
      title: parent.title,
      planner: parent.planner,
      reviewer: parent.reviewer,
      ...(parent.spec === undefined ? {} : { spec: parent.spec }),
      ...(parent.implementer === undefined ? {} : { implementer: parent.implementer }),
      state: derived.state,
      status: derived.state,
      reason: parent.reason ?? null,
      evidence: parent.evidence ?? null,
      createdAt,
      updatedAt,
    },
    state: derived.state,
    status: derived.state,
    reason: parent.reason ?? null,
    evidence: parent.evidence ?? null,
    maxConcurrency: graph.max_concurrency,
    subtasks: ordered.map((row) => {
      const view = derived.subtasks.get(row.subtask_id) ?? { state: 'PENDING' as const, reason: null };
      return {
        id: row.subtask_id,
        subtaskId: row.subtask_id,
        parentTaskId: graph.id,
        ...(row.title === null ? {} : { title: row.title }),
        implementer: row.implementer,
        spec: row.spec ?? '',
        dependsOn: [...row.depends_on].sort(compareByteOrder),
        state: view.state,
        status: view.state,
        reason: view.reason,
        evidence: row.evidence ?? null,
        todoId: row.todo_id,
        todoStatus: effectiveStatus(row.status, row.unfinished_deps),
        attempt: row.attempt ?? 0,
        ...dispatchFacts(graph.id, row),
        implementationCommit: row.implementation_commit ?? null,
        scopeEvidence: row.scope_evidence ?? null,
        lastError: row.last_error ?? null,
        cleanup: row.cleanup ?? null,
        updatedAt: row.updated_at.toISOString(),
      };
    }),
    frontier: derived.frontier,
    baseCommit: graph.base_commit ?? null,
    recovery: recoveryEntries(graph, rows, new Map([...derived.subtasks].map(([id, v]) => [id, v.state]))),
    integration: graph.integration ?? null,
    review: graph.review ?? null,
    intentMap: mutable(graph.intent_map),
    intentCoverage: intentCoverageFacts(
      rows.map((row) => row.subtask_id),
      graph.intent_map,
    ),
    createdBy: graph.created_by,
    createdAt,
    updatedAt,
    revision: graph.revision,
  };
}

export type GraphRecordView = ReturnType<typeof toRecord>;

/** The list summary of a graph (no specs): derived state and per-state counts. */
export function toSummary(graph: GraphRow, rows: readonly SubtaskRow[]) {
  const derived = deriveGraph(graph, rows);
  const f = derived.frontier;
  return {
    id: graph.id,
    parentTaskId: graph.id,
    scope: graph.scope,
    title: graph.parent.title,
    state: derived.state,
    maxConcurrency: graph.max_concurrency,
    subtaskCount: rows.length,
    counts: {
      ready: f.ready.length,
      waiting: f.waiting.length,
      blocked: f.blocked.length,
      running: f.running.length,
      succeeded: f.succeeded.length,
      failed: f.failed.length,
      stopped: f.stopped.length,
    },
    intentCoverageAvailable: graph.intent_map !== null,
    scopePolicy: graph.intent_map?.scopePolicy ?? null,
    createdBy: graph.created_by,
    createdAt: graph.created_at.toISOString(),
    updatedAt: graph.updated_at.toISOString(),
    revision: graph.revision,
  };
}

/**
 * The `recovery[]` entry of one subtask (status and inspect; docs/seeds/task-graph-v1.md §10): its
 * classification (contract/execution.ts `classifyRecovery`), whether an explicit resume can move
 * it on, the last error, the verified implementation commit, the Runtime-owned worktree and the
 * dispatch session. Worktree existence and safety are the runner's facts (null here: the
 * coordinator has no checkout).
 */
export function recoveryEntry(graph: Pick<GraphRow, 'id' | 'base_commit'>, row: SubtaskRow, state: SubtaskState) {
  const lastError = (row.last_error ?? null) as { code?: string; recoverable?: boolean } | null;
  const evidence = (row.evidence ?? null) as { verified?: boolean } | null;
  const cls = classifyRecovery({
    state,
    lastErrorCode: lastError?.code ?? null,
    lastErrorRecoverable: lastError?.recoverable !== false,
    sessionStatus: row.session_status ?? null,
    completionEvidence: evidence?.verified === true,
    interrupted: !!row.interrupted,
  });
  const dispatched = (row.attempt ?? 0) > 0;
  const worktree = runtimeWorktree(graph.id, row.subtask_id);
  return {
    parentTaskId: graph.id,
    subtaskId: row.subtask_id,
    implementer: row.implementer,
    state,
    classification: cls.classification,
    recoverable: cls.recoverable,
    action: cls.recoverable ? ('resume' as const) : null,
    reason: reasonText(row.reason),
    lastError,
    implementationCommit: row.implementation_commit ?? null,
    completionEvidence: evidence?.verified === true,
    attempt: row.attempt ?? 0,
    baseCommit: graph.base_commit ?? null,
    worktree: dispatched ? { ...worktree, exists: null, safe: null, registered: null, owned: true, ownershipKnown: false } : null,
    session: row.session_id ? { id: row.session_id, agent: row.implementer, state: row.session_status ?? null, hostPid: null, hostAlive: null } : null,
    sessionOwned: !!row.session_id,
    sessionHealthy: cls.sessionHealthy,
    cleanup: row.cleanup ?? null,
  };
}

/** The recovery entries of a graph's subtasks, in byte order of id. */
export function recoveryEntries(graph: Pick<GraphRow, 'id' | 'base_commit'>, rows: readonly SubtaskRow[], states: ReadonlyMap<string, string>) {
  return [...rows]
    .sort((a, b) => compareByteOrder(a.subtask_id, b.subtask_id))
    .map((row) => recoveryEntry(graph, row, (states.get(row.subtask_id) ?? 'PENDING') as SubtaskState));
}
