/**
 * Task Graph v1 execution rules that need no database (seed 002 "Bounded parallel frontier
 * execution", "Durable recovery…", "Deterministic integration and aggregate review";
 * docs/seeds/task-graph-v1.md §3, §4, §7, §10, §11). Pure and deterministic: the coordinator's service
 * (src/graphs/execution/) reads a snapshot under the graph lock, asks these functions what the
 * facts mean, and writes what they say.
 *
 * - {@link subtaskTransitions}: which durable transitions a change made, in the contract's event
 *   order (the requested subtasks first, then derived changes in id order; no entry for a repeated
 *   identical state, so a repeat emits nothing).
 * - {@link classifyRecovery}: the `recovery[]` entry of a subtask (docs/seeds/task-graph-v1.md §10 classifications).
 * - {@link runtimeWorktree}: the Runtime-owned worktree path and branch of a subtask.
 * - {@link sourceFingerprint}: the integration source fingerprint (docs/seeds/task-graph-v1.md §11).
 */
import { createHash } from 'node:crypto';
import type { DerivedSubtaskState, SubtaskState } from './types.js';
import { compareByteOrder } from './text.js';

/** A commit id as the contract accepts it: 40 (SHA-1) or 64 (SHA-256) hex digits. */
export const COMMIT_PATTERN = /^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;

/** Whether `value` is a full commit id (40 or 64 hex digits, any case). */
export function isCommitId(value: unknown): value is string {
  return typeof value === 'string' && COMMIT_PATTERN.test(value);
}

/** The folder under the repository root where the runner keeps Coord's worktrees and logs. */
export const RUNTIME_DIR = '.coord';

/** The integration pseudo-subtask's name in worktree paths and branches (docs/seeds/task-graph-v1.md §11). */
export const INTEGRATION_NAME = '__integration__';

/**
 * The Runtime-owned worktree of a subtask (or of the integration, `__integration__`): path
 * relative to the repository root, branch and full ref. Seed 002 names them
 * `.agent-bus/worktrees/<parent>/<subtask>` and `coordinate-agents/<parent>/<subtask>`; Coord's
 * runner uses its own folder and prefix with the same shape.
 */
export function runtimeWorktree(parentTaskId: string, subtaskId: string): { path: string; branch: string; ref: string } {
  const branch = `coord/${parentTaskId}/${subtaskId}`;
  return { path: `${RUNTIME_DIR}/worktrees/${parentTaskId}/${subtaskId}`, branch, ref: `refs/heads/${branch}` };
}

/** One durable subtask transition, as `TASK_GRAPH_SUBTASK_STATE_CHANGED` reports it (docs/seeds/task-graph-v1.md §4). */
export interface SubtaskTransition {
  subtaskId: string;
  from: SubtaskState;
  to: SubtaskState;
  reason: string | null;
  /** False for the subtasks the operation acted on; true for dependents re-derived by it. */
  derived: boolean;
}

/**
 * The transitions between two derivations of one graph (before and after a change, both sorted
 * by id as `deriveFrontier` returns them). A subtask whose state is unchanged gives no entry, even
 * when its reason text changed (docs/seeds/task-graph-v1.md §3: "repeated identical transitions are
 * idempotent"). Order (docs/seeds/task-graph-v1.md §4): the subtasks in `direct`, in that order, then every other change
 * in byte order of id with `derived: true`.
 */
export function subtaskTransitions(
  before: readonly DerivedSubtaskState[],
  after: readonly DerivedSubtaskState[],
  direct: readonly string[],
): SubtaskTransition[] {
  const previous = new Map(before.map((subtask) => [subtask.id, subtask]));
  const changes = new Map<string, SubtaskTransition>();
  for (const subtask of after) {
    const was = previous.get(subtask.id);
    if (!was || was.state === subtask.state) continue;
    changes.set(subtask.id, { subtaskId: subtask.id, from: was.state, to: subtask.state, reason: subtask.reason, derived: true });
  }
  const ordered: SubtaskTransition[] = [];
  for (const id of direct) {
    const change = changes.get(id);
    if (!change) continue;
    ordered.push({ ...change, derived: false });
    changes.delete(id);
  }
  const rest = [...changes.values()].sort((left, right) => compareByteOrder(left.subtaskId, right.subtaskId));
  return [...ordered, ...rest];
}

/** Classifications of a `recovery[]` entry (docs/seeds/task-graph-v1.md §10, plus Coord's `ready`/`waiting`). */
export type RecoveryClassification = 'running' | 'completed' | 'completed-unverified' | 'interrupted' | 'failed' | 'stopped' | 'blocked' | 'ready' | 'waiting';

/** What the coordinator knows about a subtask for its recovery entry. */
export interface RecoveryFacts {
  state: SubtaskState;
  /** The last runtime error's code, when there is one (`interrupted` for a stranded dispatch). */
  lastErrorCode: string | null;
  /** Whether the error said it is recoverable (default true). */
  lastErrorRecoverable: boolean;
  /** The current dispatch's session status (`active`, `stopped`, `deleted`), or null (never dispatched). */
  sessionStatus: string | null;
  /** Verified IMPLEMENTATION_DONE evidence is recorded. */
  completionEvidence: boolean;
  /** The RUNNING subtask's session stopped or its lease expired (read before it is recorded). */
  interrupted: boolean;
}

/** A recovery classification and whether an explicit `resume` can move the subtask on. */
export interface RecoveryClass {
  classification: RecoveryClassification;
  recoverable: boolean;
  sessionHealthy: boolean;
}

/**
 * Classifies a subtask for `recovery[]` (docs/seeds/task-graph-v1.md §10): RUNNING with an active session and a
 * live lease → `running` (healthy, nothing to recover); RUNNING but stranded, or FAILED with the
 * `interrupted` code → `interrupted` (recoverable by resume); SUCCEEDED with evidence →
 * `completed`, without → `completed-unverified`; FAILED → `failed` (recoverable unless its error
 * said otherwise); STOPPED → `stopped` (recoverable); BLOCKED → `blocked` (not itself
 * recoverable: resume its failed prerequisite); READY / WAITING → `ready` / `waiting`.
 */
export function classifyRecovery(facts: RecoveryFacts): RecoveryClass {
  const sessionHealthy = facts.sessionStatus === 'active' && facts.state === 'RUNNING' && !facts.interrupted;
  switch (facts.state) {
    case 'RUNNING':
      return facts.interrupted
        ? { classification: 'interrupted', recoverable: true, sessionHealthy: false }
        : { classification: 'running', recoverable: false, sessionHealthy };
    case 'SUCCEEDED':
      return { classification: facts.completionEvidence ? 'completed' : 'completed-unverified', recoverable: false, sessionHealthy };
    case 'FAILED':
      // `interrupted`: read FAILED before the write that records it (no lastError yet).
      return facts.lastErrorCode === INTERRUPTED_CODE || facts.interrupted
        ? { classification: 'interrupted', recoverable: true, sessionHealthy }
        : { classification: 'failed', recoverable: facts.lastErrorRecoverable, sessionHealthy };
    case 'STOPPED':
      return { classification: 'stopped', recoverable: true, sessionHealthy };
    case 'BLOCKED':
      return { classification: 'blocked', recoverable: false, sessionHealthy };
    case 'WAITING':
    case 'PENDING':
      return { classification: 'waiting', recoverable: false, sessionHealthy };
    default:
      return { classification: 'ready', recoverable: false, sessionHealthy };
  }
}

/** The `lastError.code` of a dispatch stranded by a stopped session or an expired lease. */
export const INTERRUPTED_CODE = 'SESSION_INTERRUPTED';

/** One integration source: a SUCCEEDED subtask's verified commit on its Runtime branch. */
export interface IntegrationSource {
  subtaskId: string;
  branch: string;
  commit: string;
}

/**
 * The source fingerprint of an integration (docs/seeds/task-graph-v1.md §11): SHA-256 over the base commit and
 * the sources in subtask-id order (`subtaskId`, `branch`, lower-cased `commit`), as
 * `sha256:<hex>`. Any change of base, source set, branch or commit changes it, so a review of an
 * older integration is detectably stale.
 */
export function sourceFingerprint(baseCommit: string, sources: readonly IntegrationSource[]): string {
  const ordered = [...sources].sort((left, right) => compareByteOrder(left.subtaskId, right.subtaskId));
  const canonical = JSON.stringify([baseCommit.toLowerCase(), ordered.map((s) => [s.subtaskId, s.branch, s.commit.toLowerCase()])]);
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}
