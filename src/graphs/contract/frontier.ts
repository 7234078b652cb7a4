/**
 * Subtask state derivation, the deterministic frontier, and the derived parent
 * state (seed 002 "Durable graph create, status, and inspect"; docs/seeds/task-graph-v1.md §3,
 * §6 item 9).
 *
 * Pure and total: the same stored facts always give the same (deep-equal)
 * result, and every list is sorted in byte order (`after-alpha` < `alpha`).
 */
import type {
  DependencyState,
  DerivedSubtaskState,
  FrontierDerivation,
  FrontierInput,
  StoredSubtaskState,
  SubtaskState,
  TaskGraphFrontier,
  TaskGraphState,
} from './types.js';
import { SubtaskStateSchema, TaskGraphStateSchema } from './schemas.js';
import { boundReason, compareByteOrder, sortByteOrder } from './text.js';

/** Every graph state, in the order of {@link TaskGraphStateSchema} (its one definition). */
export const TASK_GRAPH_STATES: readonly TaskGraphState[] = Object.freeze([...TaskGraphStateSchema.options]);

/** Every subtask state, in the order of {@link SubtaskStateSchema} (its one definition). */
export const SUBTASK_STATES: readonly SubtaskState[] = Object.freeze([...SubtaskStateSchema.options]);

/** A prerequisite in one of these states blocks its dependents. */
const BLOCKING_PREREQUISITE_STATES: ReadonlySet<string> = new Set(['FAILED', 'BLOCKED', 'STOPPED']);

export const READY_NO_DEPENDENCIES_REASON = 'Ready: no dependencies.';
export const READY_DEPENDENCIES_SUCCEEDED_REASON = 'Ready: all dependencies succeeded.';

/** Whether a stored state is re-derived from dependency facts on every read. */
function isRederived(subtask: StoredSubtaskState): boolean {
  switch (subtask.state) {
    case 'PENDING':
    case 'READY':
    case 'WAITING':
      return true;
    case 'BLOCKED':
      return subtask.blockedExplicitly !== true;
    default:
      return false;
  }
}

function derive(dependencies: readonly DependencyState[]): { state: SubtaskState; reason: string } {
  const blocking = dependencies.filter((dependency) => BLOCKING_PREREQUISITE_STATES.has(dependency.state));
  if (blocking.length > 0) {
    const listed = [...blocking].sort((left, right) => compareByteOrder(left.id, right.id)).map((dependency) => `${dependency.id} (${dependency.state})`);
    return { state: 'BLOCKED', reason: `Blocked by dependencies: ${listed.join(', ')}.` };
  }
  if (dependencies.length === 0) return { state: 'READY', reason: READY_NO_DEPENDENCIES_REASON };
  if (dependencies.every((dependency) => dependency.state === 'SUCCEEDED')) {
    return { state: 'READY', reason: READY_DEPENDENCIES_SUCCEEDED_REASON };
  }
  const unresolved = sortByteOrder(dependencies.filter((dependency) => dependency.state !== 'SUCCEEDED').map((dependency) => dependency.id));
  return { state: 'WAITING', reason: `Waiting for dependencies: ${unresolved.join(', ')}.` };
}

/**
 * Derive every subtask's current state from its stored state and its
 * dependencies' states (docs/seeds/task-graph-v1.md §3).
 *
 * Input: stored subtasks `{ id, dependsOn, state, reason?, blockedExplicitly? }`.
 * PENDING, READY, WAITING and dependency-derived BLOCKED are re-derived; RUNNING,
 * SUCCEEDED, FAILED, STOPPED and an explicit BLOCKED are kept with their stored
 * (bounded) reason. Re-derivation, in dependency order so that it reaches
 * transitive dependents in one pass:
 * - any dependency FAILED/BLOCKED/STOPPED → BLOCKED, "Blocked by dependencies: a (FAILED), b (STOPPED)." (sorted);
 * - no dependencies → READY, "Ready: no dependencies.";
 * - every dependency SUCCEEDED → READY, "Ready: all dependencies succeeded.";
 * - otherwise → WAITING, "Waiting for dependencies: …" (the unresolved ones, sorted).
 *
 * Output: one entry per subtask, sorted by id, with `derived` (computed rather
 * than stored) and `changed` (state or reason differs from storage, i.e. a
 * durable transition and event are due). Reasons are bounded to 8 KiB of UTF-8.
 * A dependency id missing from the input is reported as `MISSING` and keeps
 * its dependent WAITING. Never throws for well-typed input; a (contract-
 * violating) cycle is cut deterministically instead of recursing forever.
 */
export function deriveSubtaskStates(subtasks: readonly StoredSubtaskState[]): DerivedSubtaskState[] {
  const ordered = [...subtasks].sort((left, right) => compareByteOrder(left.id, right.id));
  const byId = new Map<string, StoredSubtaskState>();
  for (const subtask of ordered) if (!byId.has(subtask.id)) byId.set(subtask.id, subtask);
  const resolved = new Map<string, { state: SubtaskState; reason: string | null; derived: boolean }>();
  const inProgress = new Set<string>();

  const resolve = (id: string): { state: SubtaskState; reason: string | null; derived: boolean } | null => {
    const stored = byId.get(id);
    if (!stored) return null;
    const known = resolved.get(id);
    if (known) return known;
    if (!isRederived(stored)) {
      const kept = { state: stored.state, reason: boundReason(stored.reason), derived: false };
      resolved.set(id, kept);
      return kept;
    }
    // Only reachable through a dependency cycle, which validation forbids: fall back to storage.
    if (inProgress.has(id)) return { state: stored.state, reason: boundReason(stored.reason), derived: false };
    inProgress.add(id);
    const dependencies = sortByteOrder(stored.dependsOn).map((dependency) => ({
      id: dependency,
      state: resolve(dependency)?.state ?? ('MISSING' as const),
    }));
    inProgress.delete(id);
    const next = derive(dependencies);
    const result = { state: next.state, reason: boundReason(next.reason), derived: true };
    resolved.set(id, result);
    return result;
  };

  return ordered.map((stored) => {
    const own = resolve(stored.id) ?? { state: stored.state, reason: boundReason(stored.reason), derived: false };
    const dependencies: DependencyState[] = sortByteOrder(stored.dependsOn).map((dependency) => ({
      id: dependency,
      state: resolve(dependency)?.state ?? 'MISSING',
    }));
    return {
      id: stored.id,
      state: own.state,
      reason: own.reason,
      derived: own.derived,
      changed: own.state !== stored.state || own.reason !== boundReason(stored.reason),
      dependencies,
    };
  });
}

/**
 * Group already-derived subtask states into the frontier object (docs/seeds/task-graph-v1.md §3).
 *
 * `{ ready, waiting, blocked, running, succeeded, failed, stopped, eligible,
 * capacityLimited, maxConcurrency, runningCount, availableSlots, reasons }`:
 * every list sorted by id in byte order; PENDING is listed as waiting;
 * `availableSlots = max(0, maxConcurrency − runningCount)`; `eligible` is the
 * first `availableSlots` of `ready` and `capacityLimited` the rest; `reasons`
 * maps every subtask id to its bounded reason or null.
 */
export function buildFrontier(
  subtasks: ReadonlyArray<{ readonly id: string; readonly state: SubtaskState; readonly reason?: string | null }>,
  maxConcurrency: number,
): TaskGraphFrontier {
  const groups: Record<'ready' | 'waiting' | 'blocked' | 'running' | 'succeeded' | 'failed' | 'stopped', string[]> = {
    ready: [],
    waiting: [],
    blocked: [],
    running: [],
    succeeded: [],
    failed: [],
    stopped: [],
  };
  const reasonEntries: Array<[string, string | null]> = [];
  for (const subtask of [...subtasks].sort((left, right) => compareByteOrder(left.id, right.id))) {
    switch (subtask.state) {
      case 'READY':
        groups.ready.push(subtask.id);
        break;
      case 'PENDING':
      case 'WAITING':
        groups.waiting.push(subtask.id);
        break;
      case 'BLOCKED':
        groups.blocked.push(subtask.id);
        break;
      case 'RUNNING':
        groups.running.push(subtask.id);
        break;
      case 'SUCCEEDED':
        groups.succeeded.push(subtask.id);
        break;
      case 'FAILED':
        groups.failed.push(subtask.id);
        break;
      case 'STOPPED':
        groups.stopped.push(subtask.id);
        break;
    }
    reasonEntries.push([subtask.id, boundReason(subtask.reason)]);
  }
  const runningCount = groups.running.length;
  const availableSlots = Math.max(0, maxConcurrency - runningCount);
  const eligible = groups.ready.slice(0, availableSlots);
  return {
    ...groups,
    eligible,
    capacityLimited: groups.ready.slice(eligible.length),
    maxConcurrency,
    runningCount,
    availableSlots,
    // fromEntries defines own data properties, so no id can reach a prototype.
    reasons: Object.fromEntries(reasonEntries),
  };
}

/**
 * Derive subtask states and the frontier in one call (docs/seeds/task-graph-v1.md §3):
 * `deriveSubtaskStates` followed by `buildFrontier`. Deterministic and pure;
 * computing it twice from the same facts gives deep-equal results.
 */
export function deriveFrontier(input: FrontierInput): FrontierDerivation {
  const subtasks = deriveSubtaskStates(input.subtasks);
  return { subtasks, frontier: buildFrontier(subtasks, input.maxConcurrency) };
}

/**
 * The parent (graph) state derived from its subtasks' states (docs/seeds/task-graph-v1.md §3):
 * any FAILED or BLOCKED → ERROR; else any STOPPED → STOPPED, unless another
 * subtask is still RUNNING (a scoped stop leaves the graph RUNNING); all
 * SUCCEEDED → REVIEWING (an APPROVED graph stays APPROVED); any RUNNING →
 * RUNNING; a graph still CREATED or REVIEWING keeps that state; otherwise
 * READY/WAITING/PENDING work present → RUNNING; else the previous state
 * (CREATED when there is none).
 */
export function deriveParentState(previous: TaskGraphState | null | undefined, states: readonly SubtaskState[]): TaskGraphState {
  const has = (state: SubtaskState): boolean => states.includes(state);
  if (has('FAILED') || has('BLOCKED')) return 'ERROR';
  if (has('STOPPED')) return has('RUNNING') ? 'RUNNING' : 'STOPPED';
  if (states.length > 0 && states.every((state) => state === 'SUCCEEDED')) {
    return previous === 'APPROVED' ? 'APPROVED' : 'REVIEWING';
  }
  if (has('RUNNING')) return 'RUNNING';
  if (previous === 'CREATED' || previous === 'REVIEWING') return previous;
  if (has('READY') || has('WAITING') || has('PENDING')) return 'RUNNING';
  return previous ?? 'CREATED';
}
