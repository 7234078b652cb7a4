/**
 * Task Graph v1 input validation (seed 002 "Input" and "Validation boundary";
 * docs/seeds/task-graph-v1.md §1–§2, docs/seeds/README.md §4 item 7).
 *
 * Pure: no database, no filesystem, no Agent/Adapter resolution. Structural
 * checks run in input order; missing-dependency and cycle checks then run over
 * sorted ids, so equivalent invalid inputs always produce the same diagnostic.
 */
import type { NormalizedGraph, NormalizedParentTask, NormalizedSubtask, TaskGraphFacts, ValidateTaskGraphContext, ValidateTaskGraphResult } from './types.js';
import { ContractFailure, fail as failAt, type FailureOptions } from './failure.js';
import { isAgentId, isSubtaskId, isTaskId } from './ids.js';
import { compareByteOrder, deepFreeze, displayValue, firstUnknownKey, isPlainObject, ownValue, sortByteOrder, utf8ByteLength } from './text.js';
import { findCycle } from '../../lib/dag.js';

export const TASK_GRAPH_SCHEMA_VERSION = 1;
export const TASK_GRAPH_MIN_SUBTASKS = 1;
export const TASK_GRAPH_MAX_SUBTASKS = 256;
export const TASK_GRAPH_MIN_CONCURRENCY = 1;
export const TASK_GRAPH_MAX_CONCURRENCY = 32;
/** 256 KiB, checked first as characters and then as UTF-8 bytes. */
export const TASK_GRAPH_MAX_SPEC_BYTES = 256 * 1024;
export const TASK_GRAPH_MAX_TITLE_CHARS = 1024;
export const TASK_GRAPH_MAX_AGENT_ID_CHARS = 64;
/** The contract bounds a graph input document to 64 MiB before JSON parsing. */
export const TASK_GRAPH_MAX_INPUT_BYTES = 64 * 1024 * 1024;
/** Cycle paths longer than this many entries are shown as the first 8, `...`, and the last. */
const MAX_CYCLE_PATH_ENTRIES = 9;

const TOP_LEVEL_KEYS: ReadonlySet<string> = new Set(['schemaVersion', 'parentTask', 'subtasks', 'maxConcurrency']);
const PARENT_TASK_KEYS: ReadonlySet<string> = new Set(['id', 'title', 'spec', 'planner', 'implementer', 'reviewer']);
const SUBTASK_KEYS: ReadonlySet<string> = new Set(['id', 'title', 'implementer', 'spec', 'dependsOn']);

function fail(message: string, options: FailureOptions = {}): never {
  return failAt('graph-validation', message, options);
}

function rejectUnknownFields(record: Record<string, unknown>, allowed: ReadonlySet<string>, label: string, options: FailureOptions = {}): void {
  const unknown = firstUnknownKey(record, allowed);
  if (unknown !== null) fail(`Task Graph v1 ${label} contains unknown field "${displayValue(unknown)}".`, options);
}

/** A non-empty string (after trim), returned trimmed; titles and specs are text, not identities. */
function requiredString(value: unknown, field: string, maxLength: number, options: FailureOptions): string {
  if (typeof value !== 'string' || value.trim() === '') {
    fail(`Task Graph v1 field "${field}" must be a non-empty string.`, options);
  }
  const normalized = value.trim();
  if (normalized.length > maxLength) {
    fail(`Task Graph v1 field "${field}" exceeds the ${maxLength} character limit.`, options);
  }
  return normalized;
}

/** An Agent identity: exact (never trimmed), at most 64 characters, well formed. */
function requiredAgent(value: unknown, field: string, options: FailureOptions): string {
  if (typeof value !== 'string' || value.length === 0) {
    fail(`Task Graph v1 field "${field}" must be a non-empty Agent identity.`, options);
  }
  if (value.length > TASK_GRAPH_MAX_AGENT_ID_CHARS) {
    fail(`Task Graph v1 field "${field}" exceeds the ${TASK_GRAPH_MAX_AGENT_ID_CHARS} character limit.`, options);
  }
  if (!isAgentId(value)) {
    fail(`Task Graph v1 field "${field}" Agent identity "${displayValue(value)}" is malformed.`, options);
  }
  return value;
}

function configuredAgentSet(source: unknown, parentTaskId: string): Set<string> {
  let list: unknown = source;
  if (source !== null && typeof source === 'object' && !Array.isArray(source) && !(source instanceof Set)) {
    const agents = Object.hasOwn(source, 'agents') ? (source as { agents: unknown }).agents : undefined;
    if (Array.isArray(agents)) list = agents;
  }
  if (list instanceof Set) list = [...(list as Set<unknown>)];
  if (!Array.isArray(list)) {
    fail('Task Graph v1 configuredAgents must be an array or Set of Agent identities.', { parentTaskId });
  }
  const configured = new Set<string>();
  for (const agent of list as unknown[]) {
    const id =
      typeof agent === 'string' ? agent : agent !== null && typeof agent === 'object' && Object.hasOwn(agent, 'id') ? (agent as { id: unknown }).id : undefined;
    if (typeof id === 'string' && id !== '') configured.add(id);
  }
  return configured;
}

function requireConfiguredAgent(agent: string, configured: ReadonlySet<string>, label: string, parentTaskId: string, subtaskId: string | null): void {
  if (!isAgentId(agent)) {
    fail(`Task Graph v1 ${label} identity "${displayValue(agent)}" is malformed.`, { parentTaskId, subtaskId, agent });
  }
  if (!configured.has(agent)) {
    fail(`Task Graph v1 ${label} "${displayValue(agent)}" is unknown or unconfigured.`, { parentTaskId, subtaskId, agent });
  }
}

function validateParentTask(raw: unknown): NormalizedParentTask {
  if (!isPlainObject(raw)) fail('Task Graph v1 requires one parentTask object.');
  rejectUnknownFields(raw, PARENT_TASK_KEYS, 'parentTask');
  const id = ownValue(raw, 'id');
  if (!isTaskId(id)) fail('Task Graph v1 parentTask.id must be a valid Task identifier.');
  const options = { parentTaskId: id };
  const title = requiredString(ownValue(raw, 'title'), 'parentTask.title', TASK_GRAPH_MAX_TITLE_CHARS, options);
  const planner = requiredAgent(ownValue(raw, 'planner'), 'parentTask.planner', options);
  const reviewer = requiredAgent(ownValue(raw, 'reviewer'), 'parentTask.reviewer', options);
  const parent: { -readonly [K in keyof NormalizedParentTask]: NormalizedParentTask[K] } = { id, title, planner, reviewer };
  const spec = ownValue(raw, 'spec');
  if (spec !== undefined) {
    parent.spec = requiredString(spec, 'parentTask.spec', TASK_GRAPH_MAX_SPEC_BYTES, options);
    if (utf8ByteLength(parent.spec) > TASK_GRAPH_MAX_SPEC_BYTES) {
      fail(`Task Graph v1 parent specification exceeds ${TASK_GRAPH_MAX_SPEC_BYTES} bytes.`, options);
    }
  }
  const implementer = ownValue(raw, 'implementer');
  if (implementer !== undefined) parent.implementer = requiredAgent(implementer, 'parentTask.implementer', options);
  return parent;
}

/** `alpha -> beta -> alpha`, with long paths shown as the first 8, `...`, and the last entry. */
export function formatCyclePath(cycle: readonly string[]): string {
  const bounded = cycle.length > MAX_CYCLE_PATH_ENTRIES ? [...cycle.slice(0, MAX_CYCLE_PATH_ENTRIES - 1), '...', cycle[cycle.length - 1]] : cycle;
  return bounded.join(' -> ');
}

function durableFacts(parent: NormalizedParentTask, maxConcurrency: number, subtasks: readonly NormalizedSubtask[]): TaskGraphFacts {
  return {
    parent: {
      kind: 'parent-task',
      taskId: parent.id,
      planner: parent.planner,
      ...(parent.implementer === undefined ? {} : { implementer: parent.implementer }),
      reviewer: parent.reviewer,
      state: 'CREATED',
      status: 'CREATED',
      maxConcurrency,
    },
    subtasks: subtasks.map((subtask) => ({
      kind: 'subtask',
      parentTaskId: parent.id,
      subtaskId: subtask.id,
      implementer: subtask.implementer,
      state: 'PENDING',
      status: 'PENDING',
      dependsOn: [...subtask.dependsOn],
    })),
  };
}

function validate(input: unknown, context: ValidateTaskGraphContext | undefined): NormalizedGraph {
  // 1–3: the document itself.
  if (!isPlainObject(input)) fail('Task Graph v1 input must be a JSON object.');
  rejectUnknownFields(input, TOP_LEVEL_KEYS, 'input');
  const schemaVersion = ownValue(input, 'schemaVersion');
  if (schemaVersion !== TASK_GRAPH_SCHEMA_VERSION) {
    fail(`Unsupported Task Graph schemaVersion: ${displayValue(schemaVersion ?? '(missing)')}. Expected 1.`);
  }

  // 4–9: the parent Task.
  const parentTask = validateParentTask(ownValue(input, 'parentTask'));
  const parentTaskId = parentTask.id;

  // 10–11: counts.
  const rawSubtasks = ownValue(input, 'subtasks');
  if (!Array.isArray(rawSubtasks) || rawSubtasks.length < TASK_GRAPH_MIN_SUBTASKS) {
    fail('Task Graph v1 requires at least one subtask.', { parentTaskId });
  }
  if (rawSubtasks.length > TASK_GRAPH_MAX_SUBTASKS) {
    fail(`Task Graph v1 exceeds the ${TASK_GRAPH_MAX_SUBTASKS} subtask limit.`, { parentTaskId });
  }
  const maxConcurrency = ownValue(input, 'maxConcurrency');
  if (
    typeof maxConcurrency !== 'number' ||
    !Number.isInteger(maxConcurrency) ||
    maxConcurrency < TASK_GRAPH_MIN_CONCURRENCY ||
    maxConcurrency > TASK_GRAPH_MAX_CONCURRENCY
  ) {
    fail(`Task Graph v1 maxConcurrency must be an integer from 1 to ${TASK_GRAPH_MAX_CONCURRENCY}.`, { parentTaskId });
  }

  // 12–13: configured Agent membership of the parent roles.
  const configured = configuredAgentSet(context?.configuredAgents, parentTaskId);
  requireConfiguredAgent(parentTask.planner, configured, 'parent planner', parentTaskId, null);
  requireConfiguredAgent(parentTask.reviewer, configured, 'parent reviewer', parentTaskId, null);
  if (parentTask.implementer !== undefined) {
    requireConfiguredAgent(parentTask.implementer, configured, 'parent Implementer', parentTaskId, null);
  }

  // 14: every subtask, in input order.
  const ids = new Set<string>();
  const normalized: NormalizedSubtask[] = [];
  for (let index = 0; index < rawSubtasks.length; index += 1) {
    const raw: unknown = rawSubtasks[index];
    if (!isPlainObject(raw)) fail(`Task Graph v1 subtask at index ${index} must be an object.`, { parentTaskId });
    rejectUnknownFields(raw, SUBTASK_KEYS, `subtask at index ${index}`, { parentTaskId, subtaskId: ownValue(raw, 'id') });
    const id = ownValue(raw, 'id');
    if (!isSubtaskId(id)) {
      fail(`Task Graph v1 subtask at index ${index} has malformed id "${displayValue(id)}".`, { parentTaskId });
    }
    if (ids.has(id)) fail(`Task Graph v1 contains duplicate subtask id "${id}".`, { parentTaskId });
    ids.add(id);
    const options = { parentTaskId, subtaskId: id };

    const implementer = requiredAgent(ownValue(raw, 'implementer'), `subtasks[${index}].implementer`, options);
    requireConfiguredAgent(implementer, configured, `subtask "${id}" Implementer`, parentTaskId, id);

    const spec = requiredString(ownValue(raw, 'spec'), `subtasks[${index}].spec`, TASK_GRAPH_MAX_SPEC_BYTES, options);
    if (utf8ByteLength(spec) > TASK_GRAPH_MAX_SPEC_BYTES) {
      fail(`Task Graph v1 subtask "${id}" specification exceeds ${TASK_GRAPH_MAX_SPEC_BYTES} bytes.`, options);
    }

    const rawDependsOn = ownValue(raw, 'dependsOn');
    if (rawDependsOn !== undefined && !Array.isArray(rawDependsOn)) {
      fail(`Task Graph v1 subtask "${id}" dependsOn must be an array.`, options);
    }
    const dependsOn: unknown[] = rawDependsOn === undefined ? [] : [...(rawDependsOn as unknown[])];
    if (dependsOn.some((dependency) => !isSubtaskId(dependency))) {
      fail(`Task Graph v1 subtask "${id}" has a malformed dependency identifier.`, options);
    }
    if (new Set(dependsOn).size !== dependsOn.length) {
      // Duplicate edges are rejected, never folded (docs/architecture.md §D8).
      fail(`Task Graph v1 subtask "${id}" contains a duplicate dependency edge.`, options);
    }
    if (dependsOn.includes(id)) fail(`Task Graph v1 subtask "${id}" cannot depend on itself.`, options);

    const rawTitle = ownValue(raw, 'title');
    const title = rawTitle === undefined ? undefined : requiredString(rawTitle, `subtasks[${index}].title`, TASK_GRAPH_MAX_TITLE_CHARS, options);

    normalized.push({
      id,
      parentTaskId,
      ...(title === undefined ? {} : { title }),
      implementer,
      spec,
      dependsOn: sortByteOrder(dependsOn as string[]),
      state: 'PENDING',
    });
  }

  const ordered = [...normalized].sort((left, right) => compareByteOrder(left.id, right.id));

  // 15: missing dependencies, over sorted subtasks and sorted dependencies.
  for (const subtask of ordered) {
    for (const dependency of subtask.dependsOn) {
      if (!ids.has(dependency)) {
        fail(`Task Graph v1 subtask "${subtask.id}" references missing dependency "${dependency}".`, {
          parentTaskId,
          subtaskId: subtask.id,
        });
      }
    }
  }

  // 16: acyclicity.
  const cycle = findCycle(ordered);
  if (cycle) fail(`Task Graph v1 contains a dependency cycle: ${formatCyclePath(cycle)}.`, { parentTaskId });

  return deepFreeze({
    schemaVersion: 1,
    kind: 'task-graph',
    parentTaskId,
    state: 'CREATED',
    parentTask,
    maxConcurrency,
    subtasks: ordered,
    facts: durableFacts(parentTask, maxConcurrency, ordered),
  });
}

/**
 * Validate and normalise one Task Graph v1 input document.
 *
 * Input: any value (typically `JSON.parse` output of a body ≤ 64 MiB,
 * {@link TASK_GRAPH_MAX_INPUT_BYTES}). `context.configuredAgents` is the set of
 * configured Agent ids (a Set, an array of ids or `{ id }` records, or
 * `{ agents: [...] }`); no Agent identity is ever inferred from an executable.
 *
 * Checks, in the fixed order of docs/seeds/task-graph-v1.md §2 (stage `graph-validation`):
 * plain object → unknown top-level keys (alphabetically first reported) →
 * `schemaVersion === 1` → `parentTask` object → unknown parentTask keys →
 * parent id `task-*` → title (non-empty, ≤ 1024 characters after trim) →
 * planner, reviewer (exact, ≤ 64 characters, `^[a-z][a-z0-9_-]{0,63}$`, not a
 * Windows device name) → optional parent spec (≤ 256 KiB as characters, then as
 * UTF-8 bytes) and implementer → 1–256 subtasks → `maxConcurrency` integer
 * 1–32 → configured-agent list → planner/reviewer/parent implementer configured →
 * each subtask in input order (object, unknown keys, id, duplicate id,
 * implementer well formed and configured, spec ≤ 256 KiB, `dependsOn` array of
 * well-formed ids, no duplicate edge, no self edge, optional title) → missing
 * dependencies over sorted ids → cycles (DFS from sorted ids, path bounded to
 * 9 entries as `a -> b -> a`).
 *
 * Output: `{ ok: true, value }` with a deep-frozen {@link NormalizedGraph}
 * (subtasks sorted by id, `dependsOn` sorted, titles and specs trimmed, ids
 * untouched, state CREATED / PENDING, plus the durable `facts` view), or
 * `{ ok: false, error }` with a `TASK_GRAPH_INVALID` error (non-recoverable,
 * message ≤ 2048 characters with control characters replaced, echoed values
 * ≤ 128 characters, details `{ parentTaskId, subtaskId }`).
 *
 * Never throws for bad input, including `null`, arrays, huge numbers and
 * `__proto__` keys; only own properties are read.
 */
export function validateTaskGraph(input: unknown, context: ValidateTaskGraphContext): ValidateTaskGraphResult {
  try {
    return { ok: true, value: validate(input, context) };
  } catch (error) {
    if (error instanceof ContractFailure) return { ok: false, error: error.error };
    throw error;
  }
}
