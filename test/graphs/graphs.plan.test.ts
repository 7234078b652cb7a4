/**
 * Graph Preflight over HTTP (seed 002 "Read-only Graph Preflight"; docs/seeds/task-graph-v1.md §5–§6, §14
 * scheduler cases): the wave, decisions, coverage, agent facts, and that planning writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { example, graphDoc, registerAgents, rowCounts, setSubtaskState, EXAMPLE_AGENTS } from './graphs.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await registerAgents(t.admin, EXAMPLE_AGENTS, {
    'agent-backend': { adapter: 'codex-cli', command: 'codex exec' },
    agy: { adapter: 'antigravity-cli' },
  });
});
afterAll(async () => t?.close());

let seq = 0;
const taskId = (stem: string) => `task-${stem}-${++seq}`;

async function plan(id: string) {
  const r = await t.admin.get(`/v1/graphs/${id}/plan`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.plan;
}

describe('plan of the worked example', () => {
  it('should mark coverage unavailable and concurrent writes UNVERIFIED when there is no Intent Map', async () => {
    const created = await t.admin.post('/v1/graphs', example('task-graph'));
    expect(created.status).toBe(201);
    const p = await plan('task-product-slice');
    expect(p).toMatchObject({
      schemaVersion: 1,
      deterministic: true,
      sideEffects: false,
      parentTaskId: 'task-product-slice',
      maxConcurrency: 2,
      runningCount: 0,
      availableSlots: 2,
    });
    expect(p.eligible.map((d: any) => d.subtaskId)).toEqual(['backend']);
    expect(p.decisions.map((d: any) => [d.subtaskId, d.state, d.decision, d.reason])).toEqual([
      ['backend', 'READY', 'ELIGIBLE', 'Eligible: no dependencies and a concurrency slot is available.'],
      ['docs', 'WAITING', 'WAITING', 'Waiting for dependencies: backend.'],
      ['frontend', 'WAITING', 'WAITING', 'Waiting for dependencies: backend.'],
    ]);
    expect(p.decisions[1].dependencies).toEqual([{ id: 'backend', state: 'READY' }]);
    expect(p.decisions[0].agent).toEqual({ id: 'agent-backend', registered: true, adapter: 'codex-cli', command: 'codex exec', commandSource: null });
    expect(p.decisions[1].agent).toEqual({ id: 'agent-docs', registered: true, adapter: null, command: null, commandSource: null });
    expect(p.intentCoverage.available).toBe(false);
    expect(p.intentCoverage.subtasks.every((s: any) => s.coverage === 'unavailable' && s.writeIntent === null)).toBe(true);
    expect(p.wave).toMatchObject({ intentCoverageAvailable: false, selected: ['backend'], conflictDeferred: [], capacityLimited: [] });
    expect(p.preflight.concurrentWriteSafety).toBe('UNVERIFIED');
    expect(p.preflight.risks[0]).toMatchObject({ code: 'INTENT_COVERAGE_UNAVAILABLE', severity: 'warning', affectedSubtasks: ['backend'] });
    expect(p.preflight.risks[0].message.length).toBeLessThanOrEqual(2048);
    expect(p.preflight.estimates).toMatchObject({ basis: 'current-selected-wave', selectedSubtaskCount: 1, worktreeCount: 1, sessionCount: 1 });
    expect(p.preflight.boundaries).toEqual({
      changesDependencies: false,
      dispatchesAgents: false,
      authorizesReview: false,
      authorizesRelease: false,
      requiresExplicitGraphRun: true,
      releaseApproval: 'RELEASE_APPROVED',
    });
    expect(p.frontier.ready).toEqual(['backend']);
  });

  it('should declare writes non-conflicting and report coverage when the Intent Map is stored', async () => {
    const graph = example('task-graph');
    const intentMap = example('intent-map');
    graph.parentTask.id = intentMap.parentTaskId = taskId('mapped');
    expect((await t.admin.post('/v1/graphs', { graph, intentMap })).status).toBe(201);
    const p = await plan(graph.parentTask.id);
    expect(p.preflight.concurrentWriteSafety).toBe('DECLARED_NON_CONFLICTING');
    expect(p.preflight.scopePolicy).toBe('warn');
    expect(p.intentCoverage).toMatchObject({ available: true, schemaVersion: 1, scopePolicy: 'warn' });
    expect(p.intentCoverage.subtasks.map((s: any) => [s.subtaskId, s.coverage])).toEqual([
      ['backend', 'declared'],
      ['docs', 'explicit-empty'],
      ['frontend', 'declared'],
    ]);
    expect(p.eligible[0].reason).toBe('Eligible: no dependencies, no selected write-intent conflict, and a concurrency slot is available.');
  });
});

describe('scheduler cases (docs/seeds/task-graph-v1.md §14)', () => {
  it('should select the capacity prefix and mark the rest capacity-limited', async () => {
    const id = taskId('capacity');
    await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'gamma' }, { id: 'alpha' }, { id: 'beta' }], 2));
    const p = await plan(id);
    expect(p.eligible.map((d: any) => d.subtaskId)).toEqual(['alpha', 'beta']);
    expect(p.capacityLimited.map((d: any) => d.subtaskId)).toEqual(['gamma']);
    expect(p.capacityLimited[0]).toMatchObject({
      decision: 'CAPACITY_LIMITED',
      reason: 'Capacity-limited: 0 of 2 slots are running and earlier READY subtasks consume the remaining slots.',
    });
    expect(p.preflight.risks.map((r: any) => r.code)).toEqual(['INTENT_COVERAGE_UNAVAILABLE', 'CAPACITY_LIMITED']);
  });

  it('should leave one slot beside a RUNNING subtask and block the dependents of a FAILED sibling', async () => {
    const id = taskId('running-failed');
    await t.admin.post(
      '/v1/graphs',
      graphDoc(id, [{ id: 'alpha' }, { id: 'beta' }, { id: 'gamma' }, { id: 'delta', dependsOn: ['alpha'] }, { id: 'epsilon', dependsOn: ['beta'] }], 2),
    );
    await setSubtaskState(t.sql, id, 'alpha', 'RUNNING');
    await setSubtaskState(t.sql, id, 'beta', 'FAILED', 'Implementer exited with code 2.');
    const p = await plan(id);
    expect([p.runningCount, p.availableSlots]).toEqual([1, 1]);
    expect(p.eligible.map((d: any) => d.subtaskId)).toEqual(['gamma']);
    const byId = Object.fromEntries(p.decisions.map((d: any) => [d.subtaskId, d]));
    expect([byId.alpha.decision, byId.alpha.reason]).toEqual(['RUNNING', 'Running: this subtask already consumes one concurrency slot.']);
    expect([byId.beta.decision, byId.beta.reason]).toEqual(['FAILED', 'Implementer exited with code 2.']);
    expect([byId.delta.decision, byId.delta.reason]).toEqual(['WAITING', 'Waiting for dependencies: alpha.']);
    expect([byId.epsilon.decision, byId.epsilon.reason]).toEqual(['BLOCKED', 'Blocked by dependencies: beta (FAILED).']);
    const status = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(status.state).toBe('ERROR');
  });

  it('should defer a write-intent conflict without consuming a slot (the docs/seeds/task-graph-v1.md §5 wave case)', async () => {
    const id = taskId('conflict');
    const graph = graphDoc(id, [{ id: 'alpha' }, { id: 'beta' }, { id: 'gamma' }, { id: 'running' }], 3);
    const intentMap = {
      schemaVersion: 1,
      parentTaskId: id,
      scopePolicy: 'strict',
      subtasks: [
        { id: 'alpha', writeIntent: ['src/shared/**'] },
        { id: 'beta', writeIntent: ['src/shared/file.js'] },
        { id: 'gamma', writeIntent: ['docs/**'] },
        { id: 'running', writeIntent: ['config/**'] },
      ],
    };
    expect((await t.admin.post('/v1/graphs', { graph, intentMap })).status).toBe(201);
    await setSubtaskState(t.sql, id, 'running', 'RUNNING');
    const p = await plan(id);
    expect(p.wave).toMatchObject({ selected: ['alpha', 'gamma'], conflictDeferred: ['beta'], capacityLimited: [] });
    expect(p.conflictDeferred.map((d: any) => d.subtaskId)).toEqual(['beta']);
    expect(p.conflicts).toEqual([
      {
        code: 'WRITE_INTENT_CONFLICT',
        subtasks: ['alpha', 'beta'],
        patterns: [
          { subtaskId: 'alpha', pattern: 'src/shared/**' },
          { subtaskId: 'beta', pattern: 'src/shared/file.js' },
        ],
        conservative: true,
      },
    ]);
    expect(p.conflictDeferred[0].conflict).toEqual(p.conflicts[0]);
    expect(p.conflictDeferred[0].reason).toMatch(/^Write-intent conflict: .*deferred from this wave\.$/);
    expect(p.preflight.scopePolicy).toBe('strict');
    expect(p.preflight.risks.map((r: any) => r.code)).toEqual(['WRITE_INTENT_CONFLICT']);
  });
});

describe('plan is read-only and deterministic', () => {
  it('should give deep-equal plans on repeated and concurrent calls and write nothing', async () => {
    const id = taskId('idempotent');
    await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }, { id: 'gamma' }, { id: 'delta' }], 2));
    await setSubtaskState(t.sql, id, 'gamma', 'RUNNING');
    const before = await rowCounts(t.sql);
    const [revision] = await t.sql`select revision, updated_at from graphs where id = ${id}`;
    const first = await plan(id);
    const second = await plan(id);
    expect(second).toEqual(first);
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => t.admin.get(`/v1/graphs/${id}/plan`)));
    for (const r of concurrent) expect(r.body.plan).toEqual(first);
    expect(await rowCounts(t.sql)).toEqual(before);
    const [after] = await t.sql`select revision, updated_at from graphs where id = ${id}`;
    expect(after).toEqual(revision);
    const events = await t.sql`select event from events where topic = ${`todo:graph:${id}`} and event like 'TASK_GRAPH%'`;
    expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_CREATED']);
  });

  it('should refuse contradictory persisted scheduling facts with TASK_STATE_CONFLICT and not repair them', async () => {
    const id = taskId('overfull');
    await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta' }], 1));
    await setSubtaskState(t.sql, id, 'alpha', 'RUNNING');
    await setSubtaskState(t.sql, id, 'beta', 'RUNNING');
    const r = await t.admin.get(`/v1/graphs/${id}/plan`);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'graph-scheduling', recoverable: false, details: { parentTaskId: id } });
    expect(r.body.detail).toContain('contradictory persisted scheduling facts');
    const [row] = await t.sql`select count(*)::int as n from todos where scope = ${`graph:${id}`} and status = 'in-progress'`;
    expect(row.n).toBe(2);
  });
});
