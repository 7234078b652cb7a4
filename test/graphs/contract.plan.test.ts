import { describe, it, expect } from 'vitest';
import {
  checkSubtaskClaim,
  planGraph,
  TaskGraphPlanSchema,
  TaskGraphSchedulingErrorSchema,
  type GraphSnapshot,
  type TaskGraphPlan,
  type TaskGraphSchedulingError,
} from '../../src/graphs/contract/index.js';
import { snapshotOf } from './fixtures.js';

function plan(snapshot: GraphSnapshot): TaskGraphPlan {
  const result = planGraph(snapshot);
  if (!result.ok) throw new Error(`unexpected plan failure: ${result.error.message}`);
  return result.value;
}

function planError(snapshot: unknown): TaskGraphSchedulingError {
  const result = planGraph(snapshot as GraphSnapshot);
  if (result.ok) throw new Error('expected the plan to be refused');
  expect(TaskGraphSchedulingErrorSchema.parse(result.error)).toEqual(result.error);
  return result.error;
}

/** The worked example: three READY subtasks, one RUNNING, 2 of 3 slots free. */
function workedExample(): GraphSnapshot {
  return snapshotOf(
    [
      { id: 'alpha', state: 'READY', writeIntent: ['src/shared/**'] },
      { id: 'beta', state: 'READY', writeIntent: ['src/shared/file.js'] },
      { id: 'gamma', state: 'READY', writeIntent: ['docs/**'] },
      { id: 'delta', state: 'RUNNING', writeIntent: ['config/**'] },
    ],
    { maxConcurrency: 3 },
  );
}

describe('planGraph: conflict-aware wave (docs/seeds/task-graph-v1.md §5)', () => {
  it('should select alpha and gamma and defer beta when beta overlaps alpha', () => {
    const result = plan(workedExample());
    expect(result.wave.selected).toEqual(['alpha', 'gamma']);
    expect(result.wave.conflictDeferred).toEqual(['beta']);
    expect(result.wave.capacityLimited).toEqual([]);
    expect(result.availableSlots).toBe(2);
    expect(result.runningCount).toBe(1);
  });

  it('should report the conflict naming both subtasks and the first overlapping pattern pair', () => {
    const result = plan(workedExample());
    const conflict = {
      code: 'WRITE_INTENT_CONFLICT',
      subtasks: ['alpha', 'beta'],
      patterns: [
        { subtaskId: 'alpha', pattern: 'src/shared/**' },
        { subtaskId: 'beta', pattern: 'src/shared/file.js' },
      ],
      conservative: true,
    };
    expect(result.conflicts).toEqual([conflict]);
    expect(result.conflictDeferred).toHaveLength(1);
    expect(result.conflictDeferred[0]).toMatchObject({
      subtaskId: 'beta',
      state: 'READY',
      decision: 'WRITE_INTENT_CONFLICT',
      reason: 'Write-intent conflict: beta pattern "src/shared/file.js" conservatively intersects alpha pattern "src/shared/**"; deferred from this wave.',
      conflict,
    });
  });

  it('should not let a deferred subtask consume a slot', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'a', state: 'READY', writeIntent: ['src/**'] },
          { id: 'b', state: 'READY', writeIntent: ['src/x.ts'] },
          { id: 'c', state: 'READY', writeIntent: ['docs/**'] },
          { id: 'd', state: 'READY', writeIntent: ['lib/**'] },
        ],
        { maxConcurrency: 2 },
      ),
    );
    expect(result.wave).toMatchObject({ selected: ['a', 'c'], conflictDeferred: ['b'], capacityLimited: ['d'] });
    expect(result.wave.reasons.d).toBe('Capacity-limited: 0 of 2 slots are running and earlier non-conflicting READY subtasks consume the remaining slots.');
  });

  it('should defer a READY subtask that conflicts with a RUNNING subtask even with free slots', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'runner', state: 'RUNNING', writeIntent: ['src/**'] },
          { id: 'writer', state: 'READY', writeIntent: ['src/app.ts'] },
        ],
        { maxConcurrency: 4 },
      ),
    );
    expect(result.wave.selected).toEqual([]);
    expect(result.wave.conflictDeferred).toEqual(['writer']);
    expect(result.conflicts[0].subtasks).toEqual(['runner', 'writer']);
  });

  it('should check conflicts before capacity when no slot is free', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'runner', state: 'RUNNING', writeIntent: ['src/**'] },
          { id: 'clash', state: 'READY', writeIntent: ['src/a'] },
          { id: 'free', state: 'READY', writeIntent: ['docs/a'] },
        ],
        { maxConcurrency: 1 },
      ),
    );
    expect(result.wave).toMatchObject({ selected: [], conflictDeferred: ['clash'], capacityLimited: ['free'] });
  });

  it('should never let an explicit-empty subtask conflict', () => {
    const result = plan(
      snapshotOf([
        { id: 'a', state: 'READY', writeIntent: ['**'] },
        { id: 'b', state: 'READY', writeIntent: [] },
      ]),
    );
    expect(result.wave.selected).toEqual(['a', 'b']);
    expect(result.intentCoverage.subtasks[1]).toEqual({ subtaskId: 'b', coverage: 'explicit-empty', writeIntent: [] });
  });

  it('should select two distinct literal paths together', () => {
    const result = plan(
      snapshotOf([
        { id: 'a', state: 'READY', writeIntent: ['src'] },
        { id: 'b', state: 'READY', writeIntent: ['src/a'] },
      ]),
    );
    expect(result.wave.selected).toEqual(['a', 'b']);
    expect(result.preflight.concurrentWriteSafety).toBe('DECLARED_NON_CONFLICTING');
  });

  it('should not change dependencies when a conflict defers a subtask', () => {
    const snapshot = snapshotOf([
      { id: 'a', state: 'READY', writeIntent: ['src/**'] },
      { id: 'b', state: 'READY', writeIntent: ['src/b'] },
      { id: 'c', state: 'PENDING', dependsOn: ['b'], writeIntent: ['src/c'] },
    ]);
    const result = plan(snapshot);
    expect(result.decisions.map((decision) => [decision.subtaskId, decision.dependencies.map((dependency) => dependency.id)])).toEqual([
      ['a', []],
      ['b', []],
      ['c', ['b']],
    ]);
    expect(result.frontier.waiting).toEqual(['c']);
    expect(snapshot.subtasks.map((subtask) => subtask.dependsOn)).toEqual([[], [], ['b']]);
  });
});

describe('planGraph: legacy graph without an Intent Map (docs/seeds/task-graph-v1.md §6)', () => {
  const legacy = (): GraphSnapshot =>
    snapshotOf([
      { id: 'alpha', state: 'READY' },
      { id: 'beta', state: 'READY' },
      { id: 'gamma', state: 'READY' },
    ]);

  it('should keep the concurrency prefix: eligible alpha and beta, capacity-limited gamma', () => {
    const result = plan(legacy());
    expect(result.eligible.map((decision) => decision.subtaskId)).toEqual(['alpha', 'beta']);
    expect(result.capacityLimited.map((decision) => decision.subtaskId)).toEqual(['gamma']);
    expect(result.wave).toEqual({
      schemaVersion: 1,
      deterministic: true,
      intentCoverageAvailable: false,
      selected: ['alpha', 'beta'],
      conflictDeferred: [],
      capacityLimited: ['gamma'],
      conflicts: [],
      reasons: {
        gamma: 'Capacity-limited: 0 of 2 slots are running and earlier READY subtasks consume the remaining slots.',
      },
    });
    expect(result.eligible[0].reason).toBe('Eligible: no dependencies and a concurrency slot is available.');
  });

  it('should mark concurrent write safety UNVERIFIED with an INTENT_COVERAGE_UNAVAILABLE risk', () => {
    const result = plan(legacy());
    expect(result.preflight.concurrentWriteSafety).toBe('UNVERIFIED');
    expect(result.preflight.scopePolicy).toBeNull();
    expect(result.preflight.risks[0]).toEqual({
      code: 'INTENT_COVERAGE_UNAVAILABLE',
      severity: 'warning',
      affectedSubtasks: ['alpha', 'beta'],
      message: 'No Intent Map is available; this legacy-compatible wave does not prove that concurrent writes are safe.',
    });
    expect(result.preflight.risks.map((risk) => risk.code)).toEqual(['INTENT_COVERAGE_UNAVAILABLE', 'CAPACITY_LIMITED']);
  });

  it('should report intent coverage unavailable with null writeIntent for every subtask', () => {
    expect(plan(legacy()).intentCoverage).toEqual({
      available: false,
      schemaVersion: null,
      scopePolicy: null,
      subtasks: ['alpha', 'beta', 'gamma'].map((subtaskId) => ({ subtaskId, coverage: 'unavailable', writeIntent: null })),
    });
  });
});

describe('planGraph: decisions, preflight and determinism', () => {
  it('should be deep-equal across repeated plans and not mutate the snapshot', () => {
    const snapshot = workedExample();
    const before = JSON.parse(JSON.stringify(snapshot));
    expect(planGraph(snapshot)).toEqual(planGraph(snapshot));
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(before);
  });

  it('should give the same plan for any subtask order in the snapshot', () => {
    const snapshot = workedExample();
    const reversed = { ...snapshot, subtasks: [...snapshot.subtasks].reverse() };
    expect(plan(reversed)).toEqual(plan(snapshot));
  });

  it('should give every subtask a sorted decision with a bounded reason', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'alpha', state: 'RUNNING' },
          { id: 'beta', state: 'FAILED', reason: 'Implementer exited with code 1.' },
          { id: 'gamma', state: 'READY' },
          { id: 'delta', state: 'WAITING', dependsOn: ['alpha'] },
          { id: 'epsilon', state: 'WAITING', dependsOn: ['beta'] },
          { id: 'zeta', state: 'SUCCEEDED' },
          { id: 'eta', state: 'STOPPED' },
          { id: 'theta', state: 'PENDING', dependsOn: ['zeta'] },
        ],
        { maxConcurrency: 3 },
      ),
    );
    expect(result.decisions.map((decision) => [decision.subtaskId, decision.decision, decision.reason])).toEqual([
      ['alpha', 'RUNNING', 'Running: this subtask already consumes one concurrency slot.'],
      ['beta', 'FAILED', 'Implementer exited with code 1.'],
      ['delta', 'WAITING', 'Waiting for dependencies: alpha.'],
      ['epsilon', 'BLOCKED', 'Blocked by dependencies: beta (FAILED).'],
      ['eta', 'STOPPED', 'Not schedulable: this subtask was stopped and requires explicit recovery.'],
      ['gamma', 'ELIGIBLE', 'Eligible: no dependencies and a concurrency slot is available.'],
      ['theta', 'ELIGIBLE', 'Eligible: all dependencies succeeded and a concurrency slot is available.'],
      ['zeta', 'SUCCEEDED', 'Not schedulable: this subtask already succeeded.'],
    ]);
    expect(result.decisions[3].dependencies).toEqual([{ id: 'beta', state: 'FAILED' }]);
    expect(result.availableSlots).toBe(2);
  });

  it('should give a failed subtask without a stored reason the recovery reason', () => {
    const result = plan(snapshotOf([{ id: 'a', state: 'FAILED' }]));
    expect(result.decisions[0].reason).toBe('Not schedulable: this subtask failed and requires explicit recovery.');
  });

  it('should bound a long stored reason to 2048 characters in a decision', () => {
    const result = plan(snapshotOf([{ id: 'a', state: 'FAILED', reason: `x${'y'.repeat(5000)}\u0001` }]));
    expect(result.decisions[0].reason.length).toBe(2048);
  });

  it('should report selected-wave estimates, at most three risks and boundary facts', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'a', state: 'READY', writeIntent: ['src/**'] },
          { id: 'b', state: 'READY', writeIntent: ['src/b'] },
          { id: 'c', state: 'READY', writeIntent: ['docs/**'] },
          { id: 'd', state: 'READY', writeIntent: ['lib/**'] },
        ],
        { maxConcurrency: 2, scopePolicy: 'strict' },
      ),
    );
    expect(result.preflight).toEqual({
      schemaVersion: 1,
      deterministic: true,
      sideEffects: false,
      scopePolicy: 'strict',
      concurrentWriteSafety: 'DECLARED_NON_CONFLICTING',
      estimates: {
        basis: 'current-selected-wave',
        selectedSubtaskCount: 2,
        worktreeCount: 2,
        branchCount: 2,
        busMessageCount: 2,
        sessionCount: 2,
        processCount: 2,
      },
      risks: [
        {
          code: 'WRITE_INTENT_CONFLICT',
          severity: 'warning',
          affectedSubtasks: ['b'],
          message: '1 READY subtask(s) are deferred because their declared write intents conflict with earlier selected or running work.',
        },
        {
          code: 'CAPACITY_LIMITED',
          severity: 'info',
          affectedSubtasks: ['d'],
          message: '1 READY subtask(s) are deferred by the persisted concurrency limit.',
        },
      ],
      boundaries: {
        changesDependencies: false,
        dispatchesAgents: false,
        authorizesReview: false,
        authorizesRelease: false,
        requiresExplicitGraphRun: true,
        releaseApproval: 'RELEASE_APPROVED',
      },
    });
  });

  it('should carry the registered adapter, command and command source of each implementer', () => {
    const result = plan(
      snapshotOf(
        [
          { id: 'a', state: 'READY', implementer: 'codex' },
          { id: 'b', state: 'READY', implementer: 'agy' },
        ],
        {
          agents: [
            { id: 'codex', adapter: 'codex-cli', command: 'codex', commandSource: 'adapter-default' },
            { id: 'agy', adapter: 'antigravity-cli', command: '/opt/agy/bin/agy', commandSource: 'project' },
            { id: 'unused' },
          ],
        },
      ),
    );
    expect(result.decisions.map((decision) => decision.agent)).toEqual([
      { id: 'codex', registered: true, adapter: 'codex-cli', command: 'codex', commandSource: 'adapter-default' },
      { id: 'agy', registered: true, adapter: 'antigravity-cli', command: '/opt/agy/bin/agy', commandSource: 'project' },
    ]);
  });

  it('should report agent facts as unresolved when no registry is supplied', () => {
    expect(plan(snapshotOf([{ id: 'a', state: 'READY' }])).decisions[0].agent).toEqual({
      id: 'codex',
      registered: null,
      adapter: null,
      command: null,
      commandSource: null,
    });
  });

  it('should match the TaskGraphPlan schema', () => {
    for (const snapshot of [
      workedExample(),
      snapshotOf([
        { id: 'a', state: 'READY' },
        { id: 'b', state: 'FAILED' },
      ]),
    ]) {
      const result = plan(snapshot);
      expect(TaskGraphPlanSchema.parse(result)).toEqual(result);
    }
  });
});

describe('planGraph: contradictory snapshots are refused, never repaired', () => {
  it('should refuse more RUNNING subtasks than maxConcurrency', () => {
    const error = planError(
      snapshotOf(
        [
          { id: 'a', state: 'RUNNING' },
          { id: 'b', state: 'RUNNING' },
        ],
        { maxConcurrency: 1 },
      ),
    );
    expect(error).toMatchObject({
      code: 'TASK_STATE_CONFLICT',
      stage: 'graph-scheduling',
      recoverable: false,
      message: 'Task Graph task-graph-1 has contradictory persisted scheduling facts: 2 RUNNING subtasks exceed maxConcurrency 1.',
    });
  });

  it('should refuse missing and self dependency edges and cycles', () => {
    expect(planError(snapshotOf([{ id: 'a', state: 'PENDING', dependsOn: ['ghost'] }])).message).toBe(
      'Task Graph task-graph-1 has an invalid dependency edge for a.',
    );
    expect(planError(snapshotOf([{ id: 'a', state: 'PENDING', dependsOn: ['a'] }])).message).toBe(
      'Task Graph task-graph-1 has an invalid dependency edge for a.',
    );
    expect(
      planError(
        snapshotOf([
          { id: 'a', state: 'PENDING', dependsOn: ['b'] },
          { id: 'b', state: 'PENDING', dependsOn: ['a'] },
        ]),
      ).message,
    ).toBe('Task Graph task-graph-1 has a dependency cycle: a -> b -> a.');
  });

  it('should refuse duplicate subtasks, unknown states and bad maxConcurrency', () => {
    expect(
      planError(
        snapshotOf([
          { id: 'a', state: 'READY' },
          { id: 'a', state: 'READY' },
        ]),
      ).message,
    ).toBe('Task Graph task-graph-1 has duplicate or malformed subtask records.');
    expect(planError(snapshotOf([{ id: 'a', state: 'DONE' as never }])).message).toBe('Task Graph task-graph-1 has an invalid subtask record: a.');
    expect(planError(snapshotOf([{ id: 'a', state: 'READY' }], { maxConcurrency: 0 })).message).toBe('Task Graph task-graph-1 has an invalid maxConcurrency.');
    expect(planError(null).message).toBe('Task Graph scheduling snapshot must be an object.');
  });

  it('should refuse a tampered Intent Map', () => {
    const snapshot = workedExample();
    const tampered = JSON.parse(JSON.stringify(snapshot.intentMap));
    tampered.subtasks[0].writeIntent = ['src\\shared/**'];
    expect(planError({ ...snapshot, intentMap: tampered }).message).toBe('Task Graph task-graph-1 has an Intent Map that is not in normalized form.');
    const foreign = { ...JSON.parse(JSON.stringify(snapshot.intentMap)), parentTaskId: 'task-other' };
    expect(planError({ ...snapshot, intentMap: foreign }).message).toBe(
      'Task Graph task-graph-1 has an invalid Intent Map: Intent Map v1 parentTaskId must match Task Graph task-graph-1.',
    );
  });

  it('should refuse an implementer missing from a supplied agents registry without a fallback', () => {
    const error = planError(snapshotOf([{ id: 'a', state: 'READY', implementer: 'agy' }], { agents: [{ id: 'codex' }] }));
    expect(error).toMatchObject({
      code: 'INVALID_AGENT_CONFIG',
      message: 'Task Graph Implementer is not registered: agy',
      details: { parentTaskId: 'task-graph-1', subtaskId: 'a', agent: 'agy' },
    });
  });

  it('should refuse a registry that lists an agent twice or carries malformed facts', () => {
    expect(planError(snapshotOf([{ id: 'a', state: 'READY' }], { agents: [{ id: 'codex' }, { id: 'codex' }] })).message).toBe(
      'Task Graph task-graph-1 agents registry lists Agent codex more than once.',
    );
    expect(planError(snapshotOf([{ id: 'a', state: 'READY' }], { agents: [{ id: 'codex', command: '  ' }] })).message).toBe(
      'Agent codex has a malformed command fact.',
    );
  });
});

describe('checkSubtaskClaim: the locked claim guard (docs/seeds/task-graph-v1.md §7)', () => {
  it('should accept a READY subtask with a free slot and no conflicting RUNNING subtask', () => {
    expect(checkSubtaskClaim(workedExample(), 'gamma')).toEqual({
      ok: true,
      value: { parentTaskId: 'task-graph-1', subtaskId: 'gamma', implementer: 'codex', runningCount: 1, availableSlots: 2 },
    });
  });

  it('should refuse a subtask that conflicts with a RUNNING subtask and name the conflict', () => {
    const snapshot = snapshotOf(
      [
        { id: 'alpha', state: 'RUNNING', writeIntent: ['src/shared/**'] },
        { id: 'beta', state: 'READY', writeIntent: ['src/shared/file.js'] },
      ],
      { maxConcurrency: 3 },
    );
    const result = checkSubtaskClaim(snapshot, 'beta');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({
      code: 'TASK_STATE_CONFLICT',
      stage: 'graph-scheduling',
      recoverable: true,
      details: { subtaskId: 'beta', conflict: { subtasks: ['alpha', 'beta'] } },
    });
  });

  it('should refuse a claim at capacity and leave the decision recoverable', () => {
    const snapshot = snapshotOf(
      [
        { id: 'a', state: 'RUNNING' },
        { id: 'b', state: 'READY' },
      ],
      { maxConcurrency: 1 },
    );
    const result = checkSubtaskClaim(snapshot, 'b');
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'TASK_STATE_CONFLICT',
        recoverable: true,
        message: 'Task Graph task-graph-1 has no available concurrency slot: 1 of 1 slots are running.',
      },
    });
  });

  it('should refuse a RUNNING, WAITING or unknown subtask with the matching code', () => {
    const snapshot = snapshotOf(
      [
        { id: 'a', state: 'RUNNING' },
        { id: 'b', state: 'WAITING', dependsOn: ['a'] },
      ],
      { maxConcurrency: 2 },
    );
    expect(checkSubtaskClaim(snapshot, 'a')).toMatchObject({
      ok: false,
      error: { code: 'TASK_ALREADY_RUNNING', message: 'Task Graph subtask task-graph-1/a is RUNNING; expected READY.' },
    });
    expect(checkSubtaskClaim(snapshot, 'b')).toMatchObject({
      ok: false,
      error: { code: 'TASK_STATE_CONFLICT', message: 'Task Graph subtask task-graph-1/b is WAITING; expected READY.' },
    });
    expect(checkSubtaskClaim(snapshot, 'ghost')).toMatchObject({
      ok: false,
      error: { code: 'TASK_NOT_FOUND', message: 'Task Graph subtask not found: task-graph-1/ghost' },
    });
  });
});
