/**
 * Task Graph v1 execution over HTTP, driven end to end by a simulated runner (the SDK-level API,
 * no git): a 10-subtask graph with an Intent Map from create to REVIEW_APPROVED — run, complete
 * with evidence, fail and resume, stop, recover a runner that died, run again until every subtask
 * is SUCCEEDED, the integration record and the review (seed 002; docs/seeds/task-graph-v1.md §3, §4,
 * docs/seeds/task-graph-v1.md §7–§11). Every step asserts the frontier, the parent state, the recovery entries and the
 * lifecycle events it wrote.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  agentSession,
  commit,
  cursor,
  evidence,
  graphOf,
  implementer,
  intentMapOf,
  lifecycle,
  registerExecutionAgents,
  states,
  type Dispatch,
} from './execution.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await registerExecutionAgents(t);
});
afterAll(async () => t?.close());

// a ─┬─ b ─┬─ d ── e ─┐
//    └─ c ─┘            ├─ j
// f ── g ──────────────┤
// h ── i ──────────────┘
const SUBTASKS = { a: [], b: ['a'], c: ['a'], d: ['b', 'c'], e: ['d'], f: [], g: ['f'], h: [], i: ['h'], j: ['e', 'g', 'i'] };
const IDS = Object.keys(SUBTASKS);

describe('a simulated runner drives a 10-subtask graph from create to review', () => {
  const id = 'task-diamond-flow';
  const base = commit();
  let owner: Awaited<ReturnType<TestApp['session']>>;
  const dispatches = new Map<string, Dispatch>();

  async function run(expected: string[]) {
    const before = await cursor(t.admin, id);
    const r = await owner.client.post(`/v1/graphs/${id}/run`, { baseCommit: base, sessionWaitMs: 1000 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.selected).toEqual(expected);
    for (const d of r.body.dispatches) {
      expect(d.worktree).toEqual({
        path: `.coord/worktrees/${id}/${d.subtaskId}`,
        branch: `coord/${id}/${d.subtaskId}`,
        ref: `refs/heads/coord/${id}/${d.subtaskId}`,
        baseCommit: base,
      });
      expect(d.session.token).toMatch(/\S{20,}/);
      expect(d.sessionWaitMs).toBe(1000);
      dispatches.set(d.subtaskId, d);
    }
    // One RUNNING event per selected subtask, requested ones first and not derived.
    const events = (await lifecycle(t.admin, id, before)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED');
    expect(events.map((e) => [e.data.subtaskId, e.data.to, e.data.derived])).toEqual(expected.map((s) => [s, 'RUNNING', false]));
    return r.body;
  }

  async function complete(sid: string, paths: string[] = [`src/${sid}/index.ts`]) {
    const d = dispatches.get(sid)!;
    // The runner reports with its own (the owner's) token: the implementer's may only heartbeat.
    const r = await owner.client.post(`/v1/graphs/${id}/subtasks/${sid}/complete`, { attempt: d.attempt, ...evidence(base, paths) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.state).toBe('SUCCEEDED');
    return r.body;
  }

  it('creates the graph as a session, with an Intent Map', async () => {
    owner = await t.session({ name: 'orchestrator' });
    const r = await owner.client.post('/v1/graphs', { graph: graphOf(id, SUBTASKS, 3), intentMap: intentMapOf(id, IDS, 'warn') });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.graph.state).toBe('CREATED');
    expect(r.body.graph.baseCommit).toBeNull();
    expect(r.body.graph.frontier.ready).toEqual(['a', 'f', 'h']);
    expect(r.body.graph.recovery.map((e: any) => e.classification)).toEqual([
      'ready',
      'waiting',
      'waiting',
      'waiting',
      'waiting',
      'ready',
      'waiting',
      'ready',
      'waiting',
      'waiting',
    ]);
  });

  it('runs the first wave: a, f, h RUNNING within maxConcurrency 3, the base fixed, the graph RUNNING', async () => {
    const before = await cursor(t.admin, id);
    const out = await run(['a', 'f', 'h']);
    expect(out.baseCommit).toBe(base);
    expect(out.state).toBe('RUNNING');
    expect(out.frontier.running).toEqual(['a', 'f', 'h']);
    expect(out.frontier.availableSlots).toBe(0);
    const status = await lifecycle(t.admin, id, before);
    expect(status.filter((e) => e.event === 'TASK_GRAPH_STATUS_CHANGED').map((e) => [e.data.from, e.data.to])).toEqual([['CREATED', 'RUNNING']]);
    const graph = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    const a = graph.subtasks.find((s: any) => s.subtaskId === 'a');
    expect(a).toMatchObject({ state: 'RUNNING', attempt: 1, worktreePath: `.coord/worktrees/${id}/a`, branch: `coord/${id}/a` });
    expect(graph.recovery.find((e: any) => e.subtaskId === 'a')).toMatchObject({ classification: 'running', sessionHealthy: true, recoverable: false });
    // The dispatch's session is bound to the implementer and names its graph and subtask.
    const s = await t.admin.get(`/v1/sessions/${dispatches.get('a')!.session.id}`);
    expect(s.body.session).toMatchObject({ agentId: 'codex', graphId: id, subtaskId: 'a', parentId: owner.id });
  });

  it('a second run with nothing READY selects nothing and writes nothing', async () => {
    const before = await cursor(t.admin, id);
    const r = await owner.client.post(`/v1/graphs/${id}/run`, { baseCommit: base });
    expect(r.status).toBe(200);
    expect(r.body.selected).toEqual([]);
    expect(await cursor(t.admin, id)).toBe(before);
  });

  it('a run with another base is refused', async () => {
    const r = await owner.client.post(`/v1/graphs/${id}/run`, { baseCommit: commit() });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'graph-scheduling', details: { baseCommit: base } });
  });

  it('completing a with evidence readies b and c in the same transaction (derived events after the trigger)', async () => {
    const before = await cursor(t.admin, id);
    const out = await complete('a');
    expect(out.transitions).toEqual([
      { subtaskId: 'a', from: 'RUNNING', to: 'SUCCEEDED', reason: null, derived: false },
      { subtaskId: 'b', from: 'WAITING', to: 'READY', reason: 'Ready: all dependencies succeeded.', derived: true },
      { subtaskId: 'c', from: 'WAITING', to: 'READY', reason: 'Ready: all dependencies succeeded.', derived: true },
    ]);
    expect(out.scopeEvidence).toMatchObject({ drift: false, scopePolicy: 'warn', actualPaths: ['src/a/index.ts'] });
    const events = await lifecycle(t.admin, id, before);
    expect(events.map((e) => [e.event, e.data.subtaskId, e.data.to, e.data.derived, e.data.triggerSubtaskId])).toEqual([
      ['TASK_GRAPH_SUBTASK_STATE_CHANGED', 'a', 'SUCCEEDED', false, 'a'],
      ['TASK_GRAPH_SUBTASK_STATE_CHANGED', 'b', 'READY', true, 'a'],
      ['TASK_GRAPH_SUBTASK_STATE_CHANGED', 'c', 'READY', true, 'a'],
    ]);
    expect(out.graph.recovery.find((e: any) => e.subtaskId === 'a')).toMatchObject({ classification: 'completed', completionEvidence: true });
    // The attempt is over: the dispatch's token no longer works.
    const again = await implementer(t, dispatches.get('a')!).get(`/v1/graphs/${id}`);
    expect(again.status).toBe(401);
  });

  it('a second complete of a changes nothing', async () => {
    const before = await cursor(t.admin, id);
    const r = await owner.client.post(`/v1/graphs/${id}/subtasks/a/complete`, evidence(base, ['src/a/x.ts']));
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'completion' });
    expect(await cursor(t.admin, id)).toBe(before);
  });

  it('fail f with AGENT_EXIT_NONZERO: f FAILED, g BLOCKED, siblings untouched, the graph ERROR', async () => {
    const d = dispatches.get('f')!;
    expect((await implementer(t, d).post(`/v1/graphs/${id}/subtasks/f/fail`, { attempt: d.attempt, code: 'AGENT_EXIT_NONZERO', message: 'x' })).status).toBe(
      403,
    );
    const r = await owner.client.post(`/v1/graphs/${id}/subtasks/f/fail`, { attempt: d.attempt, code: 'AGENT_EXIT_NONZERO', message: 'exit 3', exitCode: 3 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.transitions.map((x: any) => [x.subtaskId, x.to])).toEqual([
      ['f', 'FAILED'],
      ['g', 'BLOCKED'],
      ['j', 'BLOCKED'],
    ]);
    const g = r.body.graph;
    expect(g.state).toBe('ERROR');
    expect(states(g)).toMatchObject({ a: 'SUCCEEDED', b: 'READY', c: 'READY', f: 'FAILED', g: 'BLOCKED', h: 'RUNNING' });
    expect(g.subtasks.find((s: any) => s.subtaskId === 'g').reason).toBe('Blocked by dependencies: f (FAILED).');
    expect(g.recovery.find((e: any) => e.subtaskId === 'f')).toMatchObject({
      classification: 'failed',
      recoverable: true,
      lastError: { code: 'AGENT_EXIT_NONZERO', exitCode: 3 },
    });
    // Repeating the same failure is idempotent.
    const before = await cursor(t.admin, id);
    const again = await owner.client.post(`/v1/graphs/${id}/subtasks/f/fail`, { code: 'AGENT_EXIT_NONZERO', message: 'exit 3' });
    expect(again.body.changed).toBe(false);
    expect(await cursor(t.admin, id)).toBe(before);
  });

  it('resume f: READY again, g WAITING again, dispatch left to an explicit run; a repeat is action none', async () => {
    const r = await owner.client.post(`/v1/graphs/${id}/resume`, { subtaskId: 'f' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ command: 'task.graph-resume', dispatchRequired: true, automaticRetry: false });
    expect(r.body.outcomes[0]).toMatchObject({ subtaskId: 'f', action: 'ready-for-explicit-dispatch', changed: true, state: 'READY' });
    expect(states(r.body.graph)).toMatchObject({ f: 'READY', g: 'WAITING' });
    expect(r.body.graph.state).toBe('RUNNING');
    const before = await cursor(t.admin, id);
    const again = await owner.client.post(`/v1/graphs/${id}/resume`, { subtaskId: 'f' });
    expect(again.body.outcomes[0]).toMatchObject({ action: 'none', changed: false, error: { code: 'TASK_STATE_CONFLICT' } });
    expect(await cursor(t.admin, id)).toBe(before);
  });

  it('stop h while RUNNING: STOPPED, its session stopped, i BLOCKED; the graph stays RUNNING-derived', async () => {
    const d = dispatches.get('h')!;
    const r = await owner.client.post(`/v1/graphs/${id}/stop`, { subtaskId: 'h', reason: 'operator requested stop' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.outcomes[0]).toMatchObject({ subtaskId: 'h', action: 'stopped', state: 'STOPPED', changed: true });
    expect(states(r.body.graph)).toMatchObject({ h: 'STOPPED', i: 'BLOCKED' });
    expect((await implementer(t, d).get('/v1/me')).status).toBe(401);
    const again = await owner.client.post(`/v1/graphs/${id}/stop`, { subtaskId: 'h', reason: 'again' });
    expect(again.body.outcomes[0]).toMatchObject({ action: 'none', changed: false });
  });

  it('the next run takes b, c, f (capacity 3); the runner dies with c running; recover records it interrupted', async () => {
    await run(['b', 'c', 'f']);
    const r = await owner.client.post(`/v1/graphs/${id}/recover`, {
      observations: [
        { subtaskId: 'c', processAlive: false },
        { subtaskId: 'b', processAlive: true },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.before.find((e: any) => e.subtaskId === 'c').classification).toBe('running');
    expect(r.body.outcomes.find((o: any) => o.subtaskId === 'c')).toMatchObject({
      action: 'recorded-failed',
      changed: true,
      state: 'FAILED',
      classification: 'interrupted',
    });
    expect(r.body.outcomes.find((o: any) => o.subtaskId === 'b')).toMatchObject({ action: 'none', changed: false, state: 'RUNNING' });
    expect(states(r.body.graph)).toMatchObject({ b: 'RUNNING', c: 'FAILED', d: 'BLOCKED' });
    const before = await cursor(t.admin, id);
    const again = await owner.client.post(`/v1/graphs/${id}/recover`, {});
    expect(again.body.outcomes.every((o: any) => !o.changed)).toBe(true);
    expect(await cursor(t.admin, id)).toBe(before);
  });

  it('resumes c and h, finishes the rest wave by wave until every subtask is SUCCEEDED', async () => {
    await complete('b');
    await complete('f');
    for (const sid of ['c', 'h'])
      expect((await owner.client.post(`/v1/graphs/${id}/resume`, { subtaskId: sid })).body.outcomes[0].action).toBe('ready-for-explicit-dispatch');
    await run(['c', 'g', 'h']);
    expect(dispatches.get('c')!.attempt).toBe(2);
    for (const sid of ['c', 'g', 'h']) await complete(sid);
    await run(['d', 'i']);
    await complete('d');
    await complete('i');
    await run(['e']);
    await complete('e');
    const last = await run(['j']);
    expect(last.frontier.waiting).toEqual([]);
    const out = await complete('j');
    expect(out.graph.state).toBe('REVIEWING');
    expect(out.graph.frontier.succeeded).toEqual(IDS);
    const status = (await lifecycle(t.admin, id)).filter((e) => e.event === 'TASK_GRAPH_STATUS_CHANGED').map((e) => `${e.data.from}->${e.data.to}`);
    expect(status).toEqual(['CREATED->RUNNING', 'RUNNING->ERROR', 'ERROR->RUNNING', 'RUNNING->ERROR', 'ERROR->RUNNING', 'RUNNING->REVIEWING']);
  });

  it('records the integration, refuses a stale source, and takes the reviewer’s approval', async () => {
    const graph = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    const sources = graph.subtasks.map((s: any) => ({ subtaskId: s.subtaskId, branch: s.branch, commit: s.implementationCommit }));
    const stale = await owner.client.put(`/v1/graphs/${id}/integration`, {
      baseCommit: base,
      status: 'SUCCEEDED',
      sources: sources.map((s: any, i: number) => (i === 3 ? { ...s, commit: commit() } : s)),
      appliedRefs: sources.map((s: any) => ({ subtaskId: s.subtaskId, commit: commit() })),
      aggregateCommit: commit(),
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'integration', details: { subtaskId: 'd' } });
    const aggregate = commit();
    const body = {
      baseCommit: base,
      status: 'SUCCEEDED',
      sources,
      appliedRefs: sources.map((s: any) => ({ subtaskId: s.subtaskId, commit: commit() })),
      aggregateCommit: aggregate,
    };
    const rec = await owner.client.put(`/v1/graphs/${id}/integration`, body);
    expect(rec.status, JSON.stringify(rec.body)).toBe(200);
    expect(rec.body.integration).toMatchObject({ status: 'SUCCEEDED', aggregateCommit: aggregate, branch: `coord/${id}/__integration__` });
    const fingerprint = rec.body.integration.sourceFingerprint;
    expect(fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    const same = await owner.client.put(`/v1/graphs/${id}/integration`, body);
    expect(same.body.changed).toBe(false);

    // Only a user or the reviewer Agent's session reviews; a stale aggregate head is refused.
    const notReviewer = await owner.client.post(`/v1/graphs/${id}/review`, {
      decision: 'REVIEW_APPROVED',
      sourceFingerprint: fingerprint,
      aggregateCommit: aggregate,
    });
    expect(notReviewer.status).toBe(403);
    const reviewer = await agentSession(t, 'reviewer');
    const staleHead = await reviewer.client.post(`/v1/graphs/${id}/review`, {
      decision: 'REVIEW_APPROVED',
      sourceFingerprint: fingerprint,
      aggregateCommit: commit(),
    });
    expect(staleHead.status).toBe(409);
    expect(staleHead.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'review' });
    const before = await cursor(t.admin, id);
    const ok = await reviewer.client.post(`/v1/graphs/${id}/review`, {
      decision: 'REVIEW_APPROVED',
      sourceFingerprint: fingerprint,
      aggregateCommit: aggregate,
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ state: 'APPROVED', decision: 'REVIEW_APPROVED', authorizes: { merge: false, push: false, release: false } });
    const events = await lifecycle(t.admin, id, before);
    expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_REVIEW_RECORDED', 'TASK_GRAPH_STATUS_CHANGED']);
    expect(events[1].data).toMatchObject({ from: 'REVIEWING', to: 'APPROVED' });
    const again = await reviewer.client.post(`/v1/graphs/${id}/review`, {
      decision: 'REVIEW_APPROVED',
      sourceFingerprint: fingerprint,
      aggregateCommit: aggregate,
    });
    expect(again.body.changed).toBe(false);
  });

  it('records cleanup outcomes idempotently', async () => {
    const outcomes = IDS.map((sid) => ({ subtaskId: sid, status: 'CLEANED' }));
    const r = await owner.client.post(`/v1/graphs/${id}/cleanup`, { outcomes, integration: { status: 'CLEANED' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.outcomes.every((o: any) => o.changed && o.action === 'cleanup-cleaned')).toBe(true);
    const before = await cursor(t.admin, id);
    const again = await owner.client.post(`/v1/graphs/${id}/cleanup`, { outcomes, integration: { status: 'CLEANED' } });
    expect(again.body.outcomes.every((o: any) => !o.changed && o.idempotent)).toBe(true);
    expect(again.body.integrationCleanup).toEqual({ status: 'CLEANED', idempotent: true });
    expect(await cursor(t.admin, id)).toBe(before);
    expect(again.body.graph.state).toBe('APPROVED');
  });

  it('recorded who made every change of the run in the audit: no event without its actor', async () => {
    const [{ n }] = await t.sql<{ n: number }[]>`select count(*)::int as n from events where actor_kind is null or actor_id is null`;
    expect(n).toBe(0);
    const kinds = await t.sql<{ actor_kind: string; actor_token: string | null }[]>`
      select distinct actor_kind, actor_token from events where topic = ${`todo:graph:${id}`} order by 1, 2`;
    // The owner, the dispatched implementers and reviewer (sessions, by their `default` token), the operator.
    expect(kinds.map((k) => k.actor_kind)).toContain('session');
    expect(kinds.every((k) => k.actor_token === 'default')).toBe(true);
  });
});
