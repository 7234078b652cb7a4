/**
 * Regression tests for what a fresh user found when trying to break Task Graph execution: each
 * failed before its fix. The generic todo routes could complete, block or reopen a subtask; a
 * dispatch token was a graph owner and worked on other graphs; unpaired surrogates gave 500; a
 * resume as the first write after a lease expiry showed RUNNING → READY; subtask events carried a
 * revision that did not grow; integration and cleanup reports accepted junk; strict audits passed
 * incomplete evidence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { commit, cursor, evidence, graphOf, implementer, intentMapOf, lifecycle, registerExecutionAgents, type Dispatch } from './execution.helpers.js';

let t: TestApp;
let seq = 0;
const base = commit();
beforeAll(async () => {
  t = await startTestApp();
  await registerExecutionAgents(t);
});
afterAll(async () => t?.close());

async function started(subtasks: Record<string, string[]>, opts: { policy?: 'strict' | 'warn'; maxConcurrency?: number } = {}) {
  const id = `task-review-${++seq}`;
  const owner = await t.session({ name: `owner-${seq}` });
  const graph = graphOf(id, subtasks, opts.maxConcurrency ?? 3);
  const body = opts.policy ? { graph, intentMap: intentMapOf(id, Object.keys(subtasks), opts.policy) } : graph;
  expect((await owner.client.post('/v1/graphs', body)).status).toBe(201);
  const run = await owner.client.post(`/v1/graphs/${id}/run`, { baseCommit: base });
  expect(run.status, JSON.stringify(run.body)).toBe(200);
  const dispatches = new Map<string, Dispatch & { todoId: string }>(run.body.dispatches.map((d: any) => [d.subtaskId, d]));
  return { id, owner, dispatches };
}

describe('the generic todo routes do not move graph subtasks', () => {
  it('refuses done, block and reopen with managed_by_graph, for the dispatch token and for an operator', async () => {
    const { id, dispatches } = await started({ a: [], b: ['a'] });
    const d = dispatches.get('a')!;
    const before = await cursor(t.admin, id);
    for (const c of [implementer(t, d), t.admin]) {
      for (const path of ['done', 'block', 'reopen']) {
        const r = await c.post(`/v1/todos/${d.todoId}/${path}`, {});
        expect([path, r.status, r.body.code]).toEqual([path, 409, 'managed_by_graph']);
      }
    }
    expect(await cursor(t.admin, id)).toBe(before);
    const graph = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(graph.subtasks.map((s: any) => s.state)).toEqual(['RUNNING', 'WAITING']);
    // The lease heartbeat is the same on both routes.
    expect((await implementer(t, d).post(`/v1/todos/${d.todoId}/heartbeat`)).status).toBe(200);
  });
});

describe('a dispatch token acts on its own subtask only', () => {
  it('is not an owner: it only heartbeats its own subtask; it cannot run, stop, report outcomes or register sessions', async () => {
    const { id, dispatches } = await started({ a: [], b: [] });
    const a = implementer(t, dispatches.get('a')!);
    expect((await a.post(`/v1/graphs/${id}/run`, { baseCommit: base })).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/stop`, { reason: 'no' })).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/subtasks/b/complete`, evidence(base, ['x']))).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/subtasks/b/heartbeat`)).status).toBe(403);
    expect((await a.post('/v1/sessions', { name: 'child' })).status).toBe(403);
    // Not even its own subtask's outcome: the implementer cannot vouch for its own work.
    expect((await a.post(`/v1/graphs/${id}/subtasks/a/complete`, evidence(base, ['src/a/x']))).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/subtasks/a/fail`, { code: 'AGENT_EXIT_NONZERO', message: 'x' })).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/resume`, { subtaskId: 'a' })).status).toBe(403);
    expect((await a.post(`/v1/graphs/${id}/subtasks/a/heartbeat`)).status).toBe(200);
  });

  it('does not see or act on another graph that names the same Agent', async () => {
    const x = await started({ a: [] });
    const y = await started({ a: [] });
    const token = implementer(t, x.dispatches.get('a')!);
    expect((await token.get(`/v1/graphs/${y.id}`)).status).toBe(404);
    expect((await token.post(`/v1/graphs/${y.id}/subtasks/a/complete`, evidence(base, ['a']))).status).toBe(404);
    expect((await token.post(`/v1/graphs/${y.id}/subtasks/a/heartbeat`)).status).toBe(404);
    expect((await token.get(`/v1/todos?scope=graph:${y.id}`)).status).toBe(404);
    expect((await token.get('/v1/graphs')).body.graphs.map((g: any) => g.id)).toEqual([x.id]);
  });
});

describe('free text', () => {
  it('refuses unpaired surrogates and NUL with 400, everywhere it is stored, and writes nothing', async () => {
    const { id, owner, dispatches } = await started({ a: [] });
    const bad = 'x\ud800y';
    const before = await cursor(t.admin, id);
    const calls = [
      owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, { ...evidence(base, ['src/a/x']), summary: bad }),
      owner.client.post(`/v1/graphs/${id}/subtasks/a/fail`, { code: 'AGENT_EXIT_NONZERO', message: bad }),
      owner.client.post(`/v1/graphs/${id}/stop`, { reason: bad }),
      owner.client.post(`/v1/graphs/${id}/stop`, { reason: 'a\u0000b' }),
      owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, { ...evidence(base, []), committedChanges: [{ status: 'M', path: bad }] }),
    ];
    for (const r of await Promise.all(calls)) expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
    expect(await cursor(t.admin, id)).toBe(before);
    void dispatches;
  });
});

describe('event order and revisions', () => {
  it('a resume that is the first write after a lease expiry shows RUNNING → FAILED, then FAILED → READY', async () => {
    const { id, owner, dispatches } = await started({ a: [], b: ['a'] });
    await t.sql`update todos set progress_at = now() - interval '2 hours' where id = ${dispatches.get('a')!.todoId}`;
    const before = await cursor(t.admin, id);
    const r = await owner.client.post(`/v1/graphs/${id}/resume`, { subtaskId: 'a' });
    expect(r.body.outcomes[0]).toMatchObject({ action: 'ready-for-explicit-dispatch', state: 'READY' });
    const events = await lifecycle(t.admin, id, before);
    expect(
      events.map((e) => (e.event === 'TASK_GRAPH_STATUS_CHANGED' ? `graph ${e.data.from}->${e.data.to}` : `${e.data.subtaskId} ${e.data.from}->${e.data.to}`)),
    ).toEqual(['a RUNNING->FAILED', 'b WAITING->BLOCKED', 'graph RUNNING->ERROR', 'a FAILED->READY', 'b BLOCKED->WAITING', 'graph ERROR->RUNNING']);
  });

  it('every subtask event names the subtask and carries a revision that grows per subtask', async () => {
    const { id, owner, dispatches } = await started({ a: [], b: ['a'], c: ['a'] }, { maxConcurrency: 1 });
    await owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, evidence(base, ['src/a/x']));
    await owner.client.post(`/v1/graphs/${id}/run`, { baseCommit: base });
    await owner.client.post(`/v1/graphs/${id}/stop`, { reason: 'done for today' });
    const events = (await lifecycle(t.admin, id)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED');
    const last = new Map<string, number>();
    for (const e of events) {
      expect(e.data.id).toBe(`${id}/${e.data.subtaskId}`);
      expect(e.data.revision).toBeGreaterThan(last.get(e.data.id) ?? 0);
      last.set(e.data.id, e.data.revision);
    }
    expect(last.size).toBe(3);
    void dispatches;
  });
});

describe('reports are checked', () => {
  it('a CONFLICT integration must name the source after the applied ones, with full commit ids and relative paths', async () => {
    const { id, owner } = await started({ a: [], b: [] });
    await owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, evidence(base, ['a']));
    await owner.client.post(`/v1/graphs/${id}/subtasks/b/complete`, evidence(base, ['b']));
    const graph = (await owner.client.get(`/v1/graphs/${id}`)).body.graph;
    const sources = graph.subtasks.map((s: any) => ({ subtaskId: s.subtaskId, branch: s.branch, commit: s.implementationCommit }));
    const good = { subtaskId: 'b', commit: sources[1].commit, paths: ['src/shared.txt'], message: 'conflict' };
    const cases = [
      { appliedRefs: [{ subtaskId: 'zzz', commit: 'junk' }], conflict: good },
      { appliedRefs: [{ subtaskId: 'a', commit: commit() }], conflict: { ...good, subtaskId: 'zzz' } },
      { appliedRefs: [{ subtaskId: 'a', commit: commit() }], conflict: { ...good, commit: commit() } },
      { appliedRefs: [{ subtaskId: 'a', commit: commit() }], conflict: { ...good, paths: ['/etc/passwd'] } },
      { appliedRefs: [{ subtaskId: 'a', commit: commit() }], conflict: good, aggregateCommit: 'nothex' },
    ];
    for (const c of cases) {
      const r = await owner.client.put(`/v1/graphs/${id}/integration`, { baseCommit: base, status: 'CONFLICT', sources, ...c });
      expect([r.status, r.body.code, r.body.stage], JSON.stringify(c)).toEqual([409, 'TASK_STATE_CONFLICT', 'integration']);
    }
    const ok = await owner.client.put(`/v1/graphs/${id}/integration`, {
      baseCommit: base,
      status: 'CONFLICT',
      sources,
      appliedRefs: [{ subtaskId: 'a', commit: commit() }],
      conflict: good,
    });
    expect([ok.status, ok.body.ok]).toEqual([200, false]);
  });

  it('cleanup refuses outcomes of other subtasks than the one named, and duplicates', async () => {
    const { id, owner } = await started({ a: [], b: [] });
    const other = await owner.client.post(`/v1/graphs/${id}/cleanup`, { subtaskId: 'a', outcomes: [{ subtaskId: 'b', status: 'CLEANED' }] });
    expect([other.status, other.body.code]).toEqual([400, 'validation_failed']);
    const twice = await owner.client.post(`/v1/graphs/${id}/cleanup`, {
      outcomes: [
        { subtaskId: 'a', status: 'CLEANED' },
        { subtaskId: 'a', status: 'FAILED' },
      ],
    });
    expect([twice.status, twice.body.code]).toEqual([400, 'validation_failed']);
  });

  it('a strict audit fails closed on truncated or uninspected evidence, and nothing changes', async () => {
    const { id, owner } = await started({ a: [] }, { policy: 'strict' });
    const before = await cursor(t.admin, id);
    for (const extra of [{ committedChangesTruncated: true }, { dirtyChangesTruncated: true }, { dirtyWorktreeAvailable: false }]) {
      const r = await owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, evidence(base, ['src/a/x'], extra));
      expect([r.status, r.body.stage], JSON.stringify(extra)).toEqual([409, 'scope-audit']);
    }
    expect(await cursor(t.admin, id)).toBe(before);
  });
});
