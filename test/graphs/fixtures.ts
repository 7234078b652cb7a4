/**
 * Builders for Task Graph v1 contract tests. Every call returns fresh objects,
 * so a test may mutate what it gets.
 */
import {
  validateIntentMap,
  validateTaskGraph,
  type GraphSnapshot,
  type NormalizedGraph,
  type NormalizedIntentMap,
  type SubtaskState,
  type TaskGraphInvalid,
} from '../../src/graphs/contract/index.js';

export const CONFIGURED = new Set(['codex', 'agent-backend', 'agent-frontend', 'agent-docs', 'agy']);

/** The seed's example graph plus a third, independent `docs` subtask. */
export function graphInput(): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTask: {
      id: 'task-product-slice',
      title: 'Build the approved product slice',
      planner: 'codex',
      reviewer: 'codex',
    },
    subtasks: [
      { id: 'backend', implementer: 'agent-backend', spec: 'Implement the approved backend changes.', dependsOn: [] },
      { id: 'frontend', implementer: 'agent-frontend', spec: 'Implement the approved frontend changes.', dependsOn: ['backend'] },
      { id: 'docs', implementer: 'agent-docs', spec: 'Document the slice.' },
    ],
    maxConcurrency: 2,
  };
}

/** A minimal valid graph over the given subtask ids and edges. */
export function graphOf(subtasks: Array<{ id: string; dependsOn?: string[]; implementer?: string }>, maxConcurrency = 2): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTask: { id: 'task-graph-1', title: 'Graph', planner: 'codex', reviewer: 'codex' },
    subtasks: subtasks.map((subtask) => ({
      id: subtask.id,
      implementer: subtask.implementer ?? 'codex',
      spec: `Do ${subtask.id}.`,
      ...(subtask.dependsOn === undefined ? {} : { dependsOn: subtask.dependsOn }),
    })),
    maxConcurrency,
  };
}

export function validGraph(input: unknown = graphInput()): NormalizedGraph {
  const result = validateTaskGraph(input, { configuredAgents: CONFIGURED });
  if (!result.ok) throw new Error(`fixture graph is invalid: ${result.error.message}`);
  return result.value;
}

/** The validation error of an input that must be invalid. */
export function graphError(input: unknown, configuredAgents: ReadonlySet<string> = CONFIGURED): TaskGraphInvalid {
  const result = validateTaskGraph(input, { configuredAgents });
  if (result.ok) throw new Error('expected the graph to be invalid');
  return result.error;
}

export function intentMapError(input: unknown, graph: NormalizedGraph = validGraph()): TaskGraphInvalid {
  const result = validateIntentMap(input, graph);
  if (result.ok) throw new Error('expected the intent map to be invalid');
  return result.error;
}

export function validIntentMap(input: unknown, graph: NormalizedGraph): NormalizedIntentMap {
  const result = validateIntentMap(input, graph);
  if (!result.ok) throw new Error(`fixture intent map is invalid: ${result.error.message}`);
  if (result.value === null) throw new Error('fixture intent map is absent');
  return result.value;
}

export interface SnapshotSubtask {
  id: string;
  state: SubtaskState;
  dependsOn?: string[];
  implementer?: string;
  reason?: string | null;
  writeIntent?: string[];
  blockedExplicitly?: boolean;
}

/**
 * A scheduling snapshot. When any subtask declares `writeIntent`, an Intent
 * Map is built (subtasks without one are explicit-empty).
 */
export function snapshotOf(
  subtasks: SnapshotSubtask[],
  options: { maxConcurrency?: number; intentMap?: boolean; scopePolicy?: 'observe' | 'warn' | 'strict'; agents?: GraphSnapshot['agents'] } = {},
): GraphSnapshot {
  const parentTaskId = 'task-graph-1';
  const withMap = options.intentMap ?? subtasks.some((subtask) => subtask.writeIntent !== undefined);
  let intentMap: NormalizedIntentMap | null = null;
  if (withMap) {
    const result = validateIntentMap(
      {
        schemaVersion: 1,
        parentTaskId,
        ...(options.scopePolicy === undefined ? {} : { scopePolicy: options.scopePolicy }),
        subtasks: subtasks.map((subtask) => ({ id: subtask.id, writeIntent: subtask.writeIntent ?? [] })),
      },
      { parentTaskId, subtasks },
    );
    if (!result.ok) throw new Error(`fixture intent map is invalid: ${result.error.message}`);
    intentMap = result.value;
  }
  return {
    parentTaskId,
    maxConcurrency: options.maxConcurrency ?? 2,
    subtasks: subtasks.map((subtask) => ({
      id: subtask.id,
      implementer: subtask.implementer ?? 'codex',
      dependsOn: subtask.dependsOn ?? [],
      state: subtask.state,
      reason: subtask.reason ?? null,
      ...(subtask.blockedExplicitly === undefined ? {} : { blockedExplicitly: subtask.blockedExplicitly }),
    })),
    intentMap,
    ...(options.agents === undefined ? {} : { agents: options.agents }),
  };
}
