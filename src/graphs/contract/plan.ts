/**
 * Read-only Graph Preflight: the conflict-aware READY wave, a decision for
 * every subtask, intent coverage and preflight facts (seed 002 "Read-only
 * Graph Preflight"; docs/seeds/task-graph-v1.md §5 wave, docs/seeds/task-graph-v1.md §6 plan, docs/seeds/task-graph-v1.md §7 claim, §6 item 8).
 *
 * Pure and deterministic: one snapshot in, one plan out; unchanged facts give
 * a deep-equal plan. Execution must use the same derivation and recheck its
 * claim under the graph lock ({@link checkSubtaskClaim}).
 */
import type {
  AgentRegistryRecord,
  DerivedSubtaskState,
  GraphPreflight,
  GraphSnapshot,
  IntentCoverage,
  NormalizedIntentMap,
  PlanAgentFacts,
  PlanDecision,
  PlanGraphResult,
  PlanSubtaskSnapshot,
  PreflightRisk,
  SubtaskClaimResult,
  SubtaskState,
  TaskGraphFrontier,
  TaskGraphPlan,
  TaskGraphSchedulingError,
  TaskGraphWave,
  WriteIntentConflict,
} from './types.js';
import { deriveFrontier, SUBTASK_STATES } from './frontier.js';
import { conflictFromIndex, intentCoverageFacts, validateIntentMap, writeIntentIndex } from './intent-map.js';
import { isAgentId, isSubtaskId, isTaskId } from './ids.js';
import { boundMessage, boundText, compareByteOrder, displayValue, MAX_DECISION_REASON_CHARS, sortByteOrder } from './text.js';
import { formatCyclePath, TASK_GRAPH_MAX_CONCURRENCY, TASK_GRAPH_MAX_SUBTASKS } from './validate.js';
import { findCycle } from '../../lib/dag.js';

const COMMAND_SOURCES: ReadonlySet<string> = new Set(['project', 'user', 'adapter-default']);
const SUBTASK_STATE_SET: ReadonlySet<string> = new Set(SUBTASK_STATES);

class SchedulingFailure extends Error {
  constructor(readonly error: TaskGraphSchedulingError) {
    super(error.message);
    this.name = 'SchedulingFailure';
  }
}

function schedulingError(
  code: TaskGraphSchedulingError['code'],
  message: string,
  options: {
    parentTaskId?: string | null;
    subtaskId?: string | null;
    agent?: string;
    conflict?: WriteIntentConflict;
    recoverable?: boolean;
  } = {},
): TaskGraphSchedulingError {
  const parentTaskId = options.parentTaskId ?? null;
  return {
    code,
    stage: 'graph-scheduling',
    message: boundMessage(message),
    recoverable: options.recoverable ?? false,
    taskId: parentTaskId,
    details: {
      parentTaskId,
      subtaskId: options.subtaskId ?? null,
      ...(options.agent === undefined ? {} : { agent: displayValue(options.agent) }),
      ...(options.conflict === undefined ? {} : { conflict: options.conflict }),
    },
  };
}

function refuse(code: TaskGraphSchedulingError['code'], message: string, options: Parameters<typeof schedulingError>[2] = {}): never {
  throw new SchedulingFailure(schedulingError(code, message, options));
}

interface CheckedSnapshot {
  parentTaskId: string;
  maxConcurrency: number;
  subtasks: PlanSubtaskSnapshot[];
  intentMap: NormalizedIntentMap | null;
  agents: ReadonlyMap<string, AgentRegistryRecord> | null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function sameIntentMap(left: NormalizedIntentMap, right: NormalizedIntentMap): boolean {
  if (left.schemaVersion !== right.schemaVersion || left.parentTaskId !== right.parentTaskId) return false;
  if (left.scopePolicy !== right.scopePolicy || left.subtasks.length !== right.subtasks.length) return false;
  return left.subtasks.every((declaration, index) => {
    const other = right.subtasks[index];
    return (
      declaration.id === other.id &&
      declaration.writeIntent.length === other.writeIntent.length &&
      declaration.writeIntent.every((pattern, patternIndex) => pattern === other.writeIntent[patternIndex])
    );
  });
}

function checkAgents(raw: unknown, parentTaskId: string): ReadonlyMap<string, AgentRegistryRecord> | null {
  if (raw === undefined || raw === null) return null;
  if (!Array.isArray(raw)) refuse('INVALID_AGENT_CONFIG', `Task Graph ${parentTaskId} agents registry must be an array.`, { parentTaskId });
  const agents = new Map<string, AgentRegistryRecord>();
  for (const record of raw as unknown[]) {
    if (!isObject(record) || !isAgentId(record.id)) {
      refuse('INVALID_AGENT_CONFIG', `Task Graph ${parentTaskId} agents registry contains a malformed Agent record.`, { parentTaskId });
    }
    const id = record.id;
    if (agents.has(id)) {
      refuse('INVALID_AGENT_CONFIG', `Task Graph ${parentTaskId} agents registry lists Agent ${id} more than once.`, { parentTaskId, agent: id });
    }
    for (const field of ['adapter', 'command'] as const) {
      const value = record[field];
      if (value !== undefined && value !== null && (typeof value !== 'string' || value.trim() === '')) {
        refuse('INVALID_AGENT_CONFIG', `Agent ${id} has a malformed ${field} fact.`, { parentTaskId, agent: id });
      }
    }
    const source = record.commandSource;
    if (source !== undefined && source !== null && (typeof source !== 'string' || !COMMAND_SOURCES.has(source))) {
      refuse('INVALID_AGENT_CONFIG', `Agent ${id} has a malformed commandSource fact.`, { parentTaskId, agent: id });
    }
    agents.set(id, record as unknown as AgentRegistryRecord);
  }
  return agents;
}

/** Refuse, never repair, a snapshot whose persisted facts contradict each other (docs/seeds/task-graph-v1.md §3, #23). */
function checkSnapshot(snapshot: unknown): CheckedSnapshot {
  if (!isObject(snapshot)) refuse('TASK_STATE_CONFLICT', 'Task Graph scheduling snapshot must be an object.');
  const parentTaskId = snapshot.parentTaskId;
  if (!isTaskId(parentTaskId)) {
    refuse('TASK_STATE_CONFLICT', 'Task Graph scheduling snapshot has an invalid parent Task identifier.');
  }
  const options = { parentTaskId };
  const maxConcurrency = snapshot.maxConcurrency;
  if (typeof maxConcurrency !== 'number' || !Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > TASK_GRAPH_MAX_CONCURRENCY) {
    refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has an invalid maxConcurrency.`, options);
  }
  const rawSubtasks = snapshot.subtasks;
  if (!Array.isArray(rawSubtasks) || rawSubtasks.length === 0 || rawSubtasks.length > TASK_GRAPH_MAX_SUBTASKS) {
    refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has no valid subtask records.`, options);
  }
  const ids = new Set<string>();
  const subtasks: PlanSubtaskSnapshot[] = [];
  for (const raw of rawSubtasks as unknown[]) {
    if (!isObject(raw) || !isSubtaskId(raw.id) || ids.has(raw.id)) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has duplicate or malformed subtask records.`, options);
    }
    const id = raw.id;
    ids.add(id);
    const subtaskOptions = { parentTaskId, subtaskId: id };
    if (typeof raw.state !== 'string' || !SUBTASK_STATE_SET.has(raw.state) || !isAgentId(raw.implementer)) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has an invalid subtask record: ${id}.`, subtaskOptions);
    }
    const dependsOn = raw.dependsOn;
    if (!Array.isArray(dependsOn) || !dependsOn.every(isSubtaskId) || new Set(dependsOn).size !== dependsOn.length) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has invalid dependencies for ${id}.`, subtaskOptions);
    }
    const reason = raw.reason;
    subtasks.push({
      id,
      implementer: raw.implementer,
      dependsOn: [...(dependsOn as string[])],
      state: raw.state as SubtaskState,
      reason: typeof reason === 'string' ? reason : null,
      blockedExplicitly: raw.blockedExplicitly === true,
    });
  }
  subtasks.sort((left, right) => compareByteOrder(left.id, right.id));
  for (const subtask of subtasks) {
    if (subtask.dependsOn.some((dependency) => !ids.has(dependency) || dependency === subtask.id)) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has an invalid dependency edge for ${subtask.id}.`, {
        parentTaskId,
        subtaskId: subtask.id,
      });
    }
  }
  const cycle = findCycle(subtasks);
  if (cycle) refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has a dependency cycle: ${formatCyclePath(cycle)}.`, options);

  const runningCount = subtasks.filter((subtask) => subtask.state === 'RUNNING').length;
  if (runningCount > maxConcurrency) {
    refuse(
      'TASK_STATE_CONFLICT',
      `Task Graph ${parentTaskId} has contradictory persisted scheduling facts: ${runningCount} RUNNING subtasks exceed maxConcurrency ${maxConcurrency}.`,
      options,
    );
  }

  let intentMap: NormalizedIntentMap | null = null;
  if (snapshot.intentMap !== undefined && snapshot.intentMap !== null) {
    // Persisted maps are revalidated on read; normalisation is idempotent, so a
    // stored map must come back unchanged.
    const revalidated = validateIntentMap(snapshot.intentMap, { parentTaskId, subtasks });
    if (!revalidated.ok) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has an invalid Intent Map: ${revalidated.error.message}`, options);
    }
    if (revalidated.value === null || !sameIntentMap(revalidated.value, snapshot.intentMap as NormalizedIntentMap)) {
      refuse('TASK_STATE_CONFLICT', `Task Graph ${parentTaskId} has an Intent Map that is not in normalized form.`, options);
    }
    intentMap = revalidated.value;
  }

  return { parentTaskId, maxConcurrency, subtasks, intentMap, agents: checkAgents(snapshot.agents, parentTaskId) };
}

function agentFacts(checked: CheckedSnapshot): Map<string, PlanAgentFacts> {
  const facts = new Map<string, PlanAgentFacts>();
  for (const implementer of sortByteOrder(new Set(checked.subtasks.map((subtask) => subtask.implementer)))) {
    if (checked.agents === null) {
      facts.set(implementer, { id: implementer, registered: null, adapter: null, command: null, commandSource: null });
      continue;
    }
    const record = checked.agents.get(implementer);
    if (!record) {
      const first = checked.subtasks.find((subtask) => subtask.implementer === implementer);
      // No fallback Agent is ever selected: a missing registry fact fails before execution.
      refuse('INVALID_AGENT_CONFIG', `Task Graph Implementer is not registered: ${implementer}`, {
        parentTaskId: checked.parentTaskId,
        subtaskId: first?.id ?? null,
        agent: implementer,
      });
    }
    facts.set(implementer, {
      id: implementer,
      registered: true,
      adapter: record.adapter ?? null,
      command: record.command ?? null,
      commandSource: record.commandSource ?? null,
    });
  }
  return facts;
}

function capacityReason(frontier: TaskGraphFrontier, withIntentMap: boolean): string {
  const earlier = withIntentMap ? 'earlier non-conflicting READY subtasks' : 'earlier READY subtasks';
  return `Capacity-limited: ${frontier.runningCount} of ${frontier.maxConcurrency} slots are running and ${earlier} consume the remaining slots.`;
}

/**
 * Derive the one deterministic READY wave from a frontier (docs/seeds/task-graph-v1.md §5).
 *
 * Without a map: `selected` is the frontier's `eligible` capacity prefix and no
 * conflict is reported. With a map: READY subtasks are walked in id order; the
 * blockers are the RUNNING subtasks (sorted) and then those already selected;
 * a candidate whose write intent may overlap a blocker is deferred
 * (`conflictDeferred`, one `WRITE_INTENT_CONFLICT` fact) and does not consume a
 * slot; otherwise it is selected while slots remain, and capacity-limited
 * after. The conflict check precedes the capacity check.
 */
export function deriveWave(frontier: TaskGraphFrontier, intentMap: NormalizedIntentMap | null | undefined): TaskGraphWave {
  if (!intentMap) {
    const reason = capacityReason(frontier, false);
    return {
      schemaVersion: 1,
      deterministic: true,
      intentCoverageAvailable: false,
      selected: [...frontier.eligible],
      conflictDeferred: [],
      capacityLimited: [...frontier.capacityLimited],
      conflicts: [],
      reasons: Object.fromEntries(frontier.capacityLimited.map((id) => [id, reason])),
    };
  }
  const index = writeIntentIndex(intentMap);
  const availableSlots = Math.max(0, frontier.availableSlots);
  const selected: string[] = [];
  const conflictDeferred: string[] = [];
  const capacityLimited: string[] = [];
  const conflicts: WriteIntentConflict[] = [];
  const reasons: Array<[string, string]> = [];
  for (const candidate of frontier.ready) {
    let conflict: WriteIntentConflict | null = null;
    for (const blocker of [...frontier.running, ...selected]) {
      conflict = conflictFromIndex(index, candidate, blocker);
      if (conflict) break;
    }
    if (conflict) {
      conflictDeferred.push(candidate);
      conflicts.push(conflict);
      const mine = conflict.patterns.find((item) => item.subtaskId === candidate);
      const theirs = conflict.patterns.find((item) => item.subtaskId !== candidate);
      reasons.push([
        candidate,
        boundText(
          `Write-intent conflict: ${candidate} pattern "${mine?.pattern ?? ''}" conservatively intersects ${theirs?.subtaskId ?? ''} pattern "${theirs?.pattern ?? ''}"; deferred from this wave.`,
          MAX_DECISION_REASON_CHARS,
        ),
      ]);
      continue;
    }
    if (selected.length < availableSlots) {
      selected.push(candidate);
      continue;
    }
    capacityLimited.push(candidate);
    reasons.push([candidate, capacityReason(frontier, true)]);
  }
  return {
    schemaVersion: 1,
    deterministic: true,
    intentCoverageAvailable: true,
    selected,
    conflictDeferred,
    capacityLimited,
    conflicts,
    reasons: Object.fromEntries(reasons),
  };
}

function decisionFor(
  derived: DerivedSubtaskState,
  implementer: string,
  agent: PlanAgentFacts,
  wave: TaskGraphWave,
  sets: { selected: ReadonlySet<string>; deferred: ReadonlyMap<string, WriteIntentConflict>; capacity: ReadonlySet<string> },
  waveReasons: ReadonlyMap<string, string>,
  frontier: TaskGraphFrontier,
): PlanDecision {
  const id = derived.id;
  const noDependencies = derived.dependencies.length === 0;
  let decision: PlanDecision['decision'] = derived.state;
  let reason: string | null = derived.reason;
  if (sets.selected.has(id)) {
    decision = 'ELIGIBLE';
    reason = wave.intentCoverageAvailable
      ? noDependencies
        ? 'Eligible: no dependencies, no selected write-intent conflict, and a concurrency slot is available.'
        : 'Eligible: all dependencies succeeded, no selected write-intent conflict exists, and a concurrency slot is available.'
      : noDependencies
        ? 'Eligible: no dependencies and a concurrency slot is available.'
        : 'Eligible: all dependencies succeeded and a concurrency slot is available.';
  } else if (sets.deferred.has(id)) {
    decision = 'WRITE_INTENT_CONFLICT';
    reason = waveReasons.get(id) ?? null;
  } else if (sets.capacity.has(id)) {
    decision = 'CAPACITY_LIMITED';
    reason = waveReasons.get(id) ?? capacityReason(frontier, wave.intentCoverageAvailable);
  } else if (derived.state === 'RUNNING') {
    reason = 'Running: this subtask already consumes one concurrency slot.';
  } else if (derived.state === 'SUCCEEDED') {
    reason = 'Not schedulable: this subtask already succeeded.';
  } else if (derived.state === 'FAILED') {
    reason = derived.reason ?? 'Not schedulable: this subtask failed and requires explicit recovery.';
  } else if (derived.state === 'STOPPED') {
    reason = derived.reason ?? 'Not schedulable: this subtask was stopped and requires explicit recovery.';
  } else if (derived.state === 'BLOCKED') {
    reason = derived.reason ?? 'Blocked: at least one dependency did not succeed.';
  } else if (derived.state === 'WAITING' || derived.state === 'PENDING') {
    reason = derived.reason ?? 'Waiting: not every dependency has succeeded.';
  }
  const bounded = boundText(reason ?? '', MAX_DECISION_REASON_CHARS).trim();
  const conflict = sets.deferred.get(id);
  return {
    subtaskId: id,
    implementer,
    state: derived.state,
    decision,
    reason: bounded === '' ? 'Not schedulable.' : bounded,
    dependencies: derived.dependencies.map((dependency) => ({ ...dependency })),
    agent: { ...agent },
    ...(conflict === undefined ? {} : { conflict }),
  };
}

function preflightFacts(decisions: readonly PlanDecision[], intentCoverage: IntentCoverage): GraphPreflight {
  const ofKind = (kind: PlanDecision['decision']): string[] => decisions.filter((decision) => decision.decision === kind).map((decision) => decision.subtaskId);
  const selected = ofKind('ELIGIBLE');
  const deferred = ofKind('WRITE_INTENT_CONFLICT');
  const capacity = ofKind('CAPACITY_LIMITED');
  const risks: PreflightRisk[] = [];
  if (!intentCoverage.available) {
    risks.push({
      code: 'INTENT_COVERAGE_UNAVAILABLE',
      severity: 'warning',
      affectedSubtasks: selected,
      message: 'No Intent Map is available; this legacy-compatible wave does not prove that concurrent writes are safe.',
    });
  }
  if (deferred.length > 0) {
    risks.push({
      code: 'WRITE_INTENT_CONFLICT',
      severity: 'warning',
      affectedSubtasks: deferred,
      message: `${deferred.length} READY subtask(s) are deferred because their declared write intents conflict with earlier selected or running work.`,
    });
  }
  if (capacity.length > 0) {
    risks.push({
      code: 'CAPACITY_LIMITED',
      severity: 'info',
      affectedSubtasks: capacity,
      message: `${capacity.length} READY subtask(s) are deferred by the persisted concurrency limit.`,
    });
  }
  const count = selected.length;
  return {
    schemaVersion: 1,
    deterministic: true,
    sideEffects: false,
    scopePolicy: intentCoverage.scopePolicy,
    concurrentWriteSafety: intentCoverage.available ? 'DECLARED_NON_CONFLICTING' : 'UNVERIFIED',
    estimates: {
      basis: 'current-selected-wave',
      selectedSubtaskCount: count,
      worktreeCount: count,
      branchCount: count,
      busMessageCount: count,
      sessionCount: count,
      processCount: count,
    },
    risks: risks.slice(0, 3),
    boundaries: {
      changesDependencies: false,
      dispatchesAgents: false,
      authorizesReview: false,
      authorizesRelease: false,
      requiresExplicitGraphRun: true,
      releaseApproval: 'RELEASE_APPROVED',
    },
  };
}

function buildPlan(checked: CheckedSnapshot): TaskGraphPlan {
  const { frontier, subtasks: derived } = deriveFrontier({ maxConcurrency: checked.maxConcurrency, subtasks: checked.subtasks });
  const wave = deriveWave(frontier, checked.intentMap);
  const agents = agentFacts(checked);
  const implementers = new Map(checked.subtasks.map((subtask) => [subtask.id, subtask.implementer]));
  const deferred = new Map<string, WriteIntentConflict>();
  wave.conflicts.forEach((conflict, index) => deferred.set(wave.conflictDeferred[index], conflict));
  const sets = { selected: new Set(wave.selected), deferred, capacity: new Set(wave.capacityLimited) };
  const waveReasons = new Map(Object.entries(wave.reasons));
  const decisions = derived.map((subtask) => {
    const implementer = implementers.get(subtask.id) as string;
    return decisionFor(subtask, implementer, agents.get(implementer) as PlanAgentFacts, wave, sets, waveReasons, frontier);
  });
  const intentCoverage = intentCoverageFacts(
    checked.subtasks.map((subtask) => subtask.id),
    checked.intentMap,
  );
  return {
    schemaVersion: 1,
    deterministic: true,
    sideEffects: false,
    parentTaskId: checked.parentTaskId,
    maxConcurrency: checked.maxConcurrency,
    runningCount: frontier.runningCount,
    availableSlots: frontier.availableSlots,
    eligible: decisions.filter((decision) => decision.decision === 'ELIGIBLE'),
    capacityLimited: decisions.filter((decision) => decision.decision === 'CAPACITY_LIMITED'),
    conflictDeferred: decisions.filter((decision) => decision.decision === 'WRITE_INTENT_CONFLICT'),
    conflicts: wave.conflicts,
    wave,
    decisions,
    intentCoverage,
    preflight: preflightFacts(decisions, intentCoverage),
    frontier,
  };
}

/**
 * Graph Preflight: plan the next wave from one graph snapshot, without side
 * effects (seed 002 "Read-only Graph Preflight"; docs/seeds/task-graph-v1.md §5–§6).
 *
 * Input: `{ parentTaskId, maxConcurrency (1–32), subtasks: [{ id, implementer,
 * dependsOn, state, reason?, blockedExplicitly? }] (1–256), intentMap?,
 * agents? }` read under the graph lock. Stored states are re-derived first
 * ({@link deriveFrontier}).
 *
 * Output `{ ok: true, value: TaskGraphPlan }`:
 * `schemaVersion 1, deterministic true, sideEffects false, parentTaskId,
 * maxConcurrency, runningCount, availableSlots, eligible[] / capacityLimited[] /
 * conflictDeferred[]` (decision objects), `conflicts[]`, `wave` (see
 * {@link deriveWave}), `decisions[]` (every subtask, by id, each with a 1–2048
 * character reason, `{id, state}` dependencies, agent facts and an optional
 * conflict), `intentCoverage`, `preflight` (scope policy,
 * `concurrentWriteSafety` — `UNVERIFIED` with an `INTENT_COVERAGE_UNAVAILABLE`
 * risk when there is no map — selected-wave resource estimates, at most three
 * risks, boundary facts) and the `frontier` it was derived from.
 *
 * Failure `{ ok: false, error }` (stage `graph-scheduling`, non-recoverable):
 * `TASK_STATE_CONFLICT` for a contradictory snapshot (malformed or duplicate
 * subtasks, missing or self edges, a cycle, more RUNNING subtasks than
 * `maxConcurrency`, an Intent Map that does not revalidate to itself) and
 * `INVALID_AGENT_CONFIG` when an `agents` registry is supplied but lacks an
 * implementer or contradicts itself. Facts are never repaired. Never throws.
 */
export function planGraph(snapshot: GraphSnapshot): PlanGraphResult {
  try {
    return { ok: true, value: buildPlan(checkSnapshot(snapshot)) };
  } catch (error) {
    if (error instanceof SchedulingFailure) return { ok: false, error: error.error };
    throw error;
  }
}

/**
 * The locked claim guard for dispatching one subtask (docs/seeds/task-graph-v1.md §3, §7):
 * run it inside the transaction that holds the graph lock, on the snapshot
 * read there, immediately before marking the subtask RUNNING.
 *
 * Checks, in order: the snapshot is consistent and every implementer is
 * registered when an `agents` registry is supplied (as {@link planGraph}); the
 * subtask exists (`TASK_NOT_FOUND`); its derived state is READY
 * (`TASK_ALREADY_RUNNING` when it is RUNNING, else `TASK_STATE_CONFLICT` "… is
 * X; expected READY."); a concurrency slot remains (`TASK_STATE_CONFLICT`,
 * recoverable); with an Intent Map, its write intent does not overlap any
 * RUNNING subtask's (`TASK_STATE_CONFLICT`, recoverable, `details.conflict`).
 * All failures use stage `graph-scheduling`. Never throws.
 */
export function checkSubtaskClaim(snapshot: GraphSnapshot, subtaskId: string): SubtaskClaimResult {
  try {
    const checked = checkSnapshot(snapshot);
    const parentTaskId = checked.parentTaskId;
    agentFacts(checked);
    const { frontier, subtasks } = deriveFrontier({ maxConcurrency: checked.maxConcurrency, subtasks: checked.subtasks });
    const shownId = displayValue(subtaskId);
    const target = subtasks.find((subtask) => subtask.id === subtaskId);
    if (!target) {
      refuse('TASK_NOT_FOUND', `Task Graph subtask not found: ${parentTaskId}/${shownId}`, { parentTaskId });
    }
    const options = { parentTaskId, subtaskId: target.id };
    if (target.state === 'RUNNING') {
      refuse('TASK_ALREADY_RUNNING', `Task Graph subtask ${parentTaskId}/${target.id} is RUNNING; expected READY.`, options);
    }
    if (target.state !== 'READY') {
      refuse('TASK_STATE_CONFLICT', `Task Graph subtask ${parentTaskId}/${target.id} is ${target.state}; expected READY.`, options);
    }
    if (frontier.availableSlots < 1) {
      refuse(
        'TASK_STATE_CONFLICT',
        `Task Graph ${parentTaskId} has no available concurrency slot: ${frontier.runningCount} of ${frontier.maxConcurrency} slots are running.`,
        { ...options, recoverable: true },
      );
    }
    if (checked.intentMap) {
      const index = writeIntentIndex(checked.intentMap);
      for (const running of frontier.running) {
        const conflict = conflictFromIndex(index, target.id, running);
        if (!conflict) continue;
        const mine = conflict.patterns.find((item) => item.subtaskId === target.id);
        const theirs = conflict.patterns.find((item) => item.subtaskId !== target.id);
        refuse(
          'TASK_STATE_CONFLICT',
          `Task Graph subtask ${parentTaskId}/${target.id} write intent "${mine?.pattern ?? ''}" conservatively intersects RUNNING subtask ${running} pattern "${theirs?.pattern ?? ''}".`,
          { ...options, recoverable: true, conflict },
        );
      }
    }
    const implementer = checked.subtasks.find((subtask) => subtask.id === target.id)?.implementer as string;
    return {
      ok: true,
      value: {
        parentTaskId,
        subtaskId: target.id,
        implementer,
        runningCount: frontier.runningCount,
        availableSlots: frontier.availableSlots,
      },
    };
  } catch (error) {
    if (error instanceof SchedulingFailure) return { ok: false, error: error.error };
    throw error;
  }
}
