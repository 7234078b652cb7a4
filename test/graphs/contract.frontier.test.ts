import { describe, it, expect } from 'vitest';
import {
  buildFrontier,
  deriveFrontier,
  deriveParentState,
  deriveSubtaskStates,
  TaskGraphFrontierSchema,
  type StoredSubtaskState,
  type SubtaskState,
} from '../../src/graphs/contract/index.js';
import { validGraph } from './fixtures.js';

function stored(id: string, state: SubtaskState, dependsOn: string[] = [], extra: Partial<StoredSubtaskState> = {}): StoredSubtaskState {
  return { id, state, dependsOn, ...extra };
}

function stateOf(subtasks: StoredSubtaskState[], id: string): { state: SubtaskState; reason: string | null } {
  const found = deriveSubtaskStates(subtasks).find((subtask) => subtask.id === id);
  if (!found) throw new Error(`no subtask ${id}`);
  return { state: found.state, reason: found.reason };
}

describe('deriveSubtaskStates', () => {
  it('should make a dependency-free subtask READY', () => {
    expect(stateOf([stored('alpha', 'PENDING')], 'alpha')).toEqual({ state: 'READY', reason: 'Ready: no dependencies.' });
  });

  it('should make a subtask with unresolved dependencies WAITING and list them sorted', () => {
    const subtasks = [stored('zeta', 'RUNNING'), stored('alpha', 'READY'), stored('omega', 'PENDING', ['zeta', 'alpha'])];
    expect(stateOf(subtasks, 'omega')).toEqual({ state: 'WAITING', reason: 'Waiting for dependencies: alpha, zeta.' });
  });

  it('should list only the unresolved dependencies in a WAITING reason', () => {
    const subtasks = [stored('alpha', 'SUCCEEDED'), stored('beta', 'RUNNING'), stored('gamma', 'WAITING', ['alpha', 'beta'])];
    expect(stateOf(subtasks, 'gamma').reason).toBe('Waiting for dependencies: beta.');
  });

  it('should make a subtask READY once all its dependencies succeeded', () => {
    const subtasks = [stored('alpha', 'SUCCEEDED'), stored('beta', 'SUCCEEDED'), stored('gamma', 'WAITING', ['beta', 'alpha'])];
    expect(stateOf(subtasks, 'gamma')).toEqual({ state: 'READY', reason: 'Ready: all dependencies succeeded.' });
  });

  it('should block a dependent of a FAILED prerequisite with a deterministic reason', () => {
    const subtasks = [stored('beta', 'FAILED'), stored('gamma', 'WAITING', ['beta'])];
    expect(stateOf(subtasks, 'gamma')).toEqual({ state: 'BLOCKED', reason: 'Blocked by dependencies: beta (FAILED).' });
  });

  it('should list every failed, blocked and stopped prerequisite sorted in a BLOCKED reason', () => {
    const subtasks = [
      stored('b', 'STOPPED'),
      stored('a', 'FAILED'),
      stored('c', 'SUCCEEDED'),
      stored('d', 'RUNNING'),
      stored('z', 'WAITING', ['d', 'c', 'b', 'a']),
    ];
    expect(stateOf(subtasks, 'z')).toEqual({ state: 'BLOCKED', reason: 'Blocked by dependencies: a (FAILED), b (STOPPED).' });
  });

  it('should block transitive dependents in one derivation', () => {
    const subtasks = [stored('a', 'FAILED'), stored('b', 'WAITING', ['a']), stored('c', 'WAITING', ['b'])];
    expect(stateOf(subtasks, 'b').state).toBe('BLOCKED');
    expect(stateOf(subtasks, 'c')).toEqual({ state: 'BLOCKED', reason: 'Blocked by dependencies: b (BLOCKED).' });
  });

  it('should return a dependency-derived BLOCKED to WAITING once the prerequisite is resumed', () => {
    const subtasks = [
      stored('a', 'READY'),
      stored('b', 'BLOCKED', ['a'], { reason: 'Blocked by dependencies: a (FAILED).' }),
      stored('c', 'BLOCKED', ['b'], { reason: 'Blocked by dependencies: b (BLOCKED).' }),
    ];
    expect(stateOf(subtasks, 'b')).toEqual({ state: 'WAITING', reason: 'Waiting for dependencies: a.' });
    expect(stateOf(subtasks, 'c')).toEqual({ state: 'WAITING', reason: 'Waiting for dependencies: b.' });
  });

  it('should preserve an explicit BLOCKED with its stored reason', () => {
    const subtasks = [stored('a', 'BLOCKED', [], { blockedExplicitly: true, reason: 'Operator hold.' }), stored('b', 'PENDING', ['a'])];
    expect(stateOf(subtasks, 'a')).toEqual({ state: 'BLOCKED', reason: 'Operator hold.' });
    expect(stateOf(subtasks, 'b')).toEqual({ state: 'BLOCKED', reason: 'Blocked by dependencies: a (BLOCKED).' });
  });

  it('should keep RUNNING, SUCCEEDED, FAILED and STOPPED as stored', () => {
    const subtasks = [
      stored('a', 'RUNNING', [], { reason: 'Dispatched.' }),
      stored('b', 'SUCCEEDED'),
      stored('c', 'FAILED', ['a'], { reason: 'exit 1' }),
      stored('d', 'STOPPED', ['b']),
    ];
    expect(deriveSubtaskStates(subtasks).map(({ id, state, reason, derived }) => ({ id, state, reason, derived }))).toEqual([
      { id: 'a', state: 'RUNNING', reason: 'Dispatched.', derived: false },
      { id: 'b', state: 'SUCCEEDED', reason: null, derived: false },
      { id: 'c', state: 'FAILED', reason: 'exit 1', derived: false },
      { id: 'd', state: 'STOPPED', reason: null, derived: false },
    ]);
  });

  it('should flag changed only when the state or reason differs from storage', () => {
    const subtasks = [stored('a', 'READY', [], { reason: 'Ready: no dependencies.' }), stored('b', 'PENDING', ['a']), stored('c', 'RUNNING')];
    const derived = deriveSubtaskStates(subtasks);
    expect(derived.map((subtask) => [subtask.id, subtask.changed])).toEqual([
      ['a', false],
      ['b', true],
      ['c', false],
    ]);
  });

  it('should report each dependency with its derived state', () => {
    const subtasks = [stored('a', 'FAILED'), stored('b', 'PENDING', ['a']), stored('c', 'PENDING', ['b', 'a'])];
    expect(deriveSubtaskStates(subtasks)[2].dependencies).toEqual([
      { id: 'a', state: 'FAILED' },
      { id: 'b', state: 'BLOCKED' },
    ]);
  });

  it('should give the same result for any input order', () => {
    const subtasks = [stored('c', 'PENDING', ['b']), stored('a', 'SUCCEEDED'), stored('b', 'PENDING', ['a'])];
    expect(deriveSubtaskStates([...subtasks].reverse())).toEqual(deriveSubtaskStates(subtasks));
  });

  it('should keep a subtask WAITING on a dependency missing from the snapshot', () => {
    const derived = deriveSubtaskStates([stored('a', 'PENDING', ['ghost'])]);
    expect(derived[0]).toMatchObject({ state: 'WAITING', dependencies: [{ id: 'ghost', state: 'MISSING' }] });
  });

  it('should not recurse forever on a contract-violating cycle', () => {
    const derived = deriveSubtaskStates([stored('a', 'PENDING', ['b']), stored('b', 'PENDING', ['a'])]);
    expect(derived.map((subtask) => subtask.state)).toEqual(['WAITING', 'WAITING']);
  });
});

describe('buildFrontier and deriveFrontier', () => {
  it('should start a created graph with ready [backend] and waiting [docs, frontend]', () => {
    const graph = validGraph({
      schemaVersion: 1,
      parentTask: { id: 'task-persist', title: 'Persist', planner: 'codex', reviewer: 'codex' },
      subtasks: [
        { id: 'backend', implementer: 'codex', spec: 'b' },
        { id: 'frontend', implementer: 'codex', spec: 'f', dependsOn: ['backend'] },
        { id: 'docs', implementer: 'codex', spec: 'd', dependsOn: ['backend'] },
      ],
      maxConcurrency: 2,
    });
    const { frontier, subtasks } = deriveFrontier({ maxConcurrency: graph.maxConcurrency, subtasks: graph.subtasks });
    expect(frontier.ready).toEqual(['backend']);
    expect(frontier.waiting).toEqual(['docs', 'frontend']);
    expect(subtasks.map((subtask) => subtask.state)).toEqual(['READY', 'WAITING', 'WAITING']);
  });

  it('should sort every list in byte order so after-alpha precedes alpha', () => {
    const { frontier } = deriveFrontier({
      maxConcurrency: 4,
      subtasks: [stored('alpha', 'PENDING'), stored('after-alpha', 'PENDING'), stored('zed', 'PENDING'), stored('a_b', 'PENDING')],
    });
    expect(frontier.ready).toEqual(['a_b', 'after-alpha', 'alpha', 'zed']);
    expect(Object.keys(frontier.reasons)).toEqual(['a_b', 'after-alpha', 'alpha', 'zed']);
  });

  it('should split ready into eligible and capacity-limited by the free slots', () => {
    const { frontier } = deriveFrontier({
      maxConcurrency: 2,
      subtasks: [stored('alpha', 'READY'), stored('beta', 'READY'), stored('gamma', 'READY')],
    });
    expect(frontier).toMatchObject({
      ready: ['alpha', 'beta', 'gamma'],
      eligible: ['alpha', 'beta'],
      capacityLimited: ['gamma'],
      maxConcurrency: 2,
      runningCount: 0,
      availableSlots: 2,
    });
  });

  it('should leave one slot with a RUNNING and a FAILED sibling and give dependents reasons', () => {
    const { frontier } = deriveFrontier({
      maxConcurrency: 2,
      subtasks: [
        stored('alpha', 'RUNNING'),
        stored('beta', 'FAILED', [], { reason: 'Implementer exited with code 1.' }),
        stored('gamma', 'READY'),
        stored('delta', 'WAITING', ['alpha']),
        stored('epsilon', 'WAITING', ['beta']),
      ],
    });
    expect(frontier).toEqual({
      ready: ['gamma'],
      waiting: ['delta'],
      blocked: ['epsilon'],
      running: ['alpha'],
      succeeded: [],
      failed: ['beta'],
      stopped: [],
      eligible: ['gamma'],
      capacityLimited: [],
      maxConcurrency: 2,
      runningCount: 1,
      availableSlots: 1,
      reasons: {
        alpha: null,
        beta: 'Implementer exited with code 1.',
        delta: 'Waiting for dependencies: alpha.',
        epsilon: 'Blocked by dependencies: beta (FAILED).',
        gamma: 'Ready: no dependencies.',
      },
    });
    expect(TaskGraphFrontierSchema.parse(frontier)).toEqual(frontier);
  });

  it('should never report negative free slots', () => {
    const frontier = buildFrontier(
      [
        { id: 'a', state: 'RUNNING' },
        { id: 'b', state: 'RUNNING' },
        { id: 'c', state: 'READY' },
      ],
      1,
    );
    expect(frontier).toMatchObject({ availableSlots: 0, eligible: [], capacityLimited: ['c'], runningCount: 2 });
  });

  it('should list a PENDING subtask as waiting when grouping stored states directly', () => {
    expect(buildFrontier([{ id: 'a', state: 'PENDING' }], 1).waiting).toEqual(['a']);
  });

  it('should bound stored reasons to 8 KiB and replace control characters', () => {
    const { frontier } = deriveFrontier({ maxConcurrency: 1, subtasks: [stored('a', 'FAILED', [], { reason: `bad\u0000${'€'.repeat(5000)}` })] });
    const reason = frontier.reasons.a ?? '';
    expect(Buffer.byteLength(reason, 'utf8')).toBeLessThanOrEqual(8 * 1024);
    expect(reason.startsWith('bad €')).toBe(true);
    expect(reason.endsWith('€')).toBe(true);
  });

  it('should be deep-equal when derived twice from the same facts', () => {
    const input = { maxConcurrency: 3, subtasks: [stored('a', 'SUCCEEDED'), stored('b', 'PENDING', ['a']), stored('c', 'RUNNING')] };
    expect(deriveFrontier(input)).toEqual(deriveFrontier(input));
  });

  it('should keep an unrelated sibling READY when a child fails', () => {
    const { frontier } = deriveFrontier({
      maxConcurrency: 2,
      subtasks: [stored('backend', 'FAILED'), stored('frontend', 'WAITING', ['backend']), stored('docs', 'READY')],
    });
    expect(frontier.ready).toEqual(['docs']);
    expect(frontier.blocked).toEqual(['frontend']);
  });
});

describe('deriveParentState', () => {
  it('should derive ERROR from any FAILED or BLOCKED subtask', () => {
    expect(deriveParentState('RUNNING', ['FAILED', 'READY'])).toBe('ERROR');
    expect(deriveParentState('RUNNING', ['RUNNING', 'BLOCKED'])).toBe('ERROR');
  });

  it('should derive STOPPED from a stopped subtask unless another is still RUNNING', () => {
    expect(deriveParentState('RUNNING', ['STOPPED', 'READY'])).toBe('STOPPED');
    expect(deriveParentState('RUNNING', ['STOPPED', 'RUNNING'])).toBe('RUNNING');
  });

  it('should derive REVIEWING when every subtask SUCCEEDED and keep APPROVED', () => {
    expect(deriveParentState('RUNNING', ['SUCCEEDED', 'SUCCEEDED'])).toBe('REVIEWING');
    expect(deriveParentState('APPROVED', ['SUCCEEDED'])).toBe('APPROVED');
  });

  it('should keep a CREATED graph CREATED until work runs', () => {
    expect(deriveParentState('CREATED', ['READY', 'WAITING'])).toBe('CREATED');
    expect(deriveParentState('CREATED', ['RUNNING', 'WAITING'])).toBe('RUNNING');
    expect(deriveParentState(null, ['READY'])).toBe('RUNNING');
  });

  it('should derive RUNNING for a graph past CREATED with remaining READY or WAITING work', () => {
    expect(deriveParentState('ERROR', ['READY', 'SUCCEEDED'])).toBe('RUNNING');
    expect(deriveParentState('REVIEWING', ['READY', 'SUCCEEDED'])).toBe('REVIEWING');
  });
});
