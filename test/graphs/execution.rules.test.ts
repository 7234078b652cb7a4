/**
 * Task Graph v1 execution rules over HTTP, one rule per test on a fresh graph (docs/seeds/task-graph-v1.md §7,
 * docs/seeds/task-graph-v1.md §9, §10, §11): Scope Audit policies and its fail-closed inputs, completion verification,
 * stale attempts, who may act on a dispatch, stranded dispatches (lease expiry, a stopped
 * session), the fleet `next` claim, whole-graph stop, resume and cleanup of a RUNNING subtask,
 * and the integration / review record. Every refusal also asserts that nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, startTestApp, type TestApp } from '../helpers/app.js';
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
  type Dispatch as RunnerDispatch,
} from './execution.helpers.js';

/** The dispatch record with the fields these tests read beyond the runner's. */
type Dispatch = RunnerDispatch & { todoId: string; writeIntent: string[] | null; scopePolicy: string | null };

let t: TestApp;
let seq = 0;
const base = commit();

beforeAll(async () => {
  t = await startTestApp();
  await registerExecutionAgents(t);
});
afterAll(async () => t?.close());

type Policy = 'observe' | 'warn' | 'strict';

/** Creates a graph as admin (optionally with an Intent Map) and returns its id. */
async function createGraph(
  subtasks: Record<string, string[]>,
  opts: { maxConcurrency?: number; policy?: Policy; intents?: Record<string, string[]>; implementers?: Record<string, string> } = {},
): Promise<string> {
  const id = `task-rules-${++seq}`;
  const graph = graphOf(id, subtasks, opts.maxConcurrency ?? 3, opts.implementers ?? {});
  const body = opts.policy ? { graph, intentMap: intentMapOf(id, Object.keys(subtasks), opts.policy, opts.intents ?? {}) } : graph;
  const r = await t.admin.post('/v1/graphs', body);
  if (r.status !== 201) throw new Error(`create ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  return id;
}

/** Runs the next wave as `by` (admin by default) and returns its dispatches by subtask id. */
async function run(id: string, by: Client = t.admin): Promise<Map<string, Dispatch>> {
  const r = await by.post(`/v1/graphs/${id}/run`, { baseCommit: base });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return new Map((r.body.dispatches as Dispatch[]).map((d) => [d.subtaskId, d]));
}

/** The graph record as admin sees it. */
async function record(id: string) {
  const r = await t.admin.get(`/v1/graphs/${id}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.graph;
}

const subtaskOf = (graph: any, sid: string) => graph.subtasks.find((s: any) => s.subtaskId === sid);
const recoveryOf = (graph: any, sid: string) => graph.recovery.find((e: any) => e.subtaskId === sid);

/** `complete` by the dispatch's own session, with `body` as the evidence. */
function complete(id: string, d: Dispatch, body: Record<string, unknown>) {
  return t.admin.post(`/v1/graphs/${id}/subtasks/${d.subtaskId}/complete`, { attempt: d.attempt, ...body });
}

/** An integration report naming every subtask of `graph` on its branch at its recorded commit. */
function integrationBody(graph: any, extra: Record<string, unknown>) {
  const sources = graph.subtasks.map((s: any) => ({
    subtaskId: s.subtaskId,
    branch: `coord/${graph.id}/${s.subtaskId}`,
    commit: s.implementationCommit ?? commit(),
  }));
  return { baseCommit: base, sources, ...extra };
}

describe('1. Scope Audit policies on complete', () => {
  async function driftCase(policy: Policy, paths: string[]) {
    const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1, policy });
    const d = (await run(id)).get('a')!;
    expect(d).toMatchObject({ writeIntent: ['src/a/**'], scopePolicy: policy });
    const report = evidence(base, paths);
    const r = await complete(id, d, report);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { id, d, report, out: r.body };
  }

  it('observe with drift: SUCCEEDED, drift recorded, no reason, the dependent READY', async () => {
    const { out } = await driftCase('observe', ['outside/x.ts']);
    expect(out.ok).toBe(true);
    expect(out.state).toBe('SUCCEEDED');
    expect(out.reason).toBeNull();
    expect(out.scopeEvidence).toMatchObject({ scopePolicy: 'observe', drift: true, outsideIntentPaths: ['outside/x.ts'], outsideIntentPathCount: 1 });
    expect(out.error).toBeUndefined();
    expect(states(out.graph)).toEqual({ a: 'SUCCEEDED', b: 'READY' });
    expect(subtaskOf(out.graph, 'a').reason).toBeNull();
  });

  it('warn with drift: SUCCEEDED with a visible INTENT_SCOPE_DRIFT reason, the dependent READY', async () => {
    const { id, out } = await driftCase('warn', ['outside/x.ts', 'src/a/ok.ts']);
    expect(out.ok).toBe(true);
    expect(out.state).toBe('SUCCEEDED');
    expect(out.reason).toMatch(/^INTENT_SCOPE_DRIFT: /);
    expect(out.reason).toContain('outside/x.ts');
    expect(out.reason).not.toContain('src/a/ok.ts');
    expect(out.scopeEvidence).toMatchObject({ scopePolicy: 'warn', drift: true, outsideIntentPaths: ['outside/x.ts'] });
    expect(states(out.graph)).toEqual({ a: 'SUCCEEDED', b: 'READY' });
    // The reason is durable: the record shows it too.
    const graph = await record(id);
    expect(subtaskOf(graph, 'a')).toMatchObject({ state: 'SUCCEEDED', reason: out.reason });
    expect(subtaskOf(graph, 'a').lastError).toBeNull();
  });

  it('strict with drift: FAILED INTENT_SCOPE_DRIFT (recoverable), commit kept, the dependent BLOCKED, ok:false', async () => {
    const { id, d, report, out } = await driftCase('strict', ['outside/x.ts']);
    expect(out.ok).toBe(false);
    expect(out.state).toBe('FAILED');
    expect(out.reason).toMatch(/^INTENT_SCOPE_DRIFT/);
    expect(out.error).toMatchObject({ code: 'INTENT_SCOPE_DRIFT', stage: 'scope-audit', recoverable: true });
    expect(out.scopeEvidence).toMatchObject({ scopePolicy: 'strict', drift: true, outsideIntentPaths: ['outside/x.ts'] });
    expect(states(out.graph)).toEqual({ a: 'FAILED', b: 'BLOCKED' });
    expect(out.graph.state).toBe('ERROR');
    const graph = await record(id);
    const a = subtaskOf(graph, 'a');
    expect(a.state).toBe('FAILED');
    expect(a.lastError).toMatchObject({ code: 'INTENT_SCOPE_DRIFT', recoverable: true, outsideIntentPaths: ['outside/x.ts'] });
    expect(a.implementationCommit).toBe(report.implementationCommit);
    expect(a.scopeEvidence).toMatchObject({ drift: true, implementationCommit: report.implementationCommit });
    expect(subtaskOf(graph, 'b').state).toBe('BLOCKED');
    expect(recoveryOf(graph, 'a')).toMatchObject({ classification: 'failed', recoverable: true, implementationCommit: report.implementationCommit });
    // The attempt is over: the dispatch's session no longer works.
    expect((await implementer(t, d).get('/v1/me')).status).toBe(401);
  });

  it('strict without drift: SUCCEEDED, the dependent READY', async () => {
    const { out } = await driftCase('strict', ['src/a/index.ts', 'src/a/deep/er.ts']);
    expect(out.ok).toBe(true);
    expect(out.state).toBe('SUCCEEDED');
    expect(out.reason).toBeNull();
    expect(out.scopeEvidence).toMatchObject({ scopePolicy: 'strict', drift: false, outsideIntentPathCount: 0, outsideIntentPaths: [] });
    expect(states(out.graph)).toEqual({ a: 'SUCCEEDED', b: 'READY' });
  });
});

it('2. explicit-empty writeIntent under strict: any changed path is drift → FAILED', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1, policy: 'strict', intents: { a: [] } });
  const d = (await run(id)).get('a')!;
  expect(d.writeIntent).toEqual([]);
  const r = await complete(id, d, evidence(base, ['src/a/index.ts']));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.ok).toBe(false);
  expect(r.body.state).toBe('FAILED');
  expect(r.body.scopeEvidence).toMatchObject({ coverage: 'explicit-empty', writeIntent: [], drift: true, outsideIntentPaths: ['src/a/index.ts'] });
  expect(subtaskOf(r.body.graph, 'a').lastError).toMatchObject({ code: 'INTENT_SCOPE_DRIFT', recoverable: true });
  expect(states(r.body.graph)).toEqual({ a: 'FAILED', b: 'BLOCKED' });
});

it('3. a rename whose old path only is outside the intent is drift (strict → FAILED)', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1, policy: 'strict' });
  const d = (await run(id)).get('a')!;
  const r = await complete(id, d, evidence(base, [], { committedChanges: [{ status: 'R100', oldPath: 'outside/x.ts', path: 'src/a/x.ts' }] }));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.ok).toBe(false);
  expect(r.body.state).toBe('FAILED');
  expect(r.body.scopeEvidence.drift).toBe(true);
  expect(r.body.scopeEvidence.outsideIntentPaths).toContain('outside/x.ts');
  expect(r.body.scopeEvidence.outsideIntentPaths).not.toContain('src/a/x.ts');
  expect(r.body.scopeEvidence.actualPaths).toEqual(['outside/x.ts', 'src/a/x.ts']);
  expect(subtaskOf(r.body.graph, 'a').lastError.outsideIntentPaths).toContain('outside/x.ts');
  expect(states(r.body.graph)).toEqual({ a: 'FAILED', b: 'BLOCKED' });
});

it('4. a graph without an Intent Map: no audit, scopeEvidence null, SUCCEEDED for any path', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  expect(d).toMatchObject({ writeIntent: null, scopePolicy: null });
  const r = await complete(id, d, evidence(base, ['anything/at/all.ts', 'README.md', 'src/b/not-mine.ts']));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.ok).toBe(true);
  expect(r.body.state).toBe('SUCCEEDED');
  expect(r.body.scopeEvidence).toBeNull();
  expect(r.body.reason).toBeNull();
  expect(subtaskOf(r.body.graph, 'a').scopeEvidence).toBeNull();
  expect(states(r.body.graph)).toEqual({ a: 'SUCCEEDED', b: 'READY' });
});

it('5. fail-closed audit: an unsafe reported path is 409 scope-audit and nothing changes', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1, policy: 'observe' });
  const d = (await run(id)).get('a')!;
  const before = await cursor(t.admin, id);
  const unsafe: Record<string, unknown>[] = [
    evidence(base, ['../etc/passwd']),
    evidence(base, ['src\\a\\x.ts']),
    evidence(base, ['src/a/ok.ts'], { committedChanges: [{ status: 'R100', oldPath: 'src/a/../../etc/passwd', path: 'src/a/x.ts' }] }),
    evidence(base, ['src/a/ok.ts'], { dirtyChanges: [{ status: '??', path: '/etc/passwd' }] }),
  ];
  for (const body of unsafe) {
    const r = await complete(id, d, body);
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'scope-audit', recoverable: true });
  }
  expect(await cursor(t.admin, id)).toBe(before);
  const graph = await record(id);
  expect(states(graph)).toEqual({ a: 'RUNNING', b: 'WAITING' });
  expect(subtaskOf(graph, 'a')).toMatchObject({ implementationCommit: null, scopeEvidence: null, evidence: null, lastError: null });
  // The dispatch is untouched: its session still heartbeats, and a corrected report is accepted.
  expect((await implementer(t, d).post(`/v1/graphs/${id}/subtasks/a/heartbeat`, { attempt: d.attempt })).status).toBe(200);
  const ok = await complete(id, d, evidence(base, ['src/a/x.ts']));
  expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  expect(ok.body.state).toBe('SUCCEEDED');
});

it('6. completion verification: a bad commit or base is 422 AGENT_RUNTIME_ERROR at completion, nothing changed', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1, policy: 'strict' });
  const d = (await run(id)).get('a')!;
  const before = await cursor(t.admin, id);
  const bad: Record<string, unknown>[] = [
    evidence(base, ['src/a/x.ts'], { implementationCommit: 'done, see src/a/x.ts' }),
    evidence(base, ['src/a/x.ts'], { implementationCommit: 'g'.repeat(40) }),
    evidence(base, ['src/a/x.ts'], { implementationCommit: commit().slice(0, 12) }),
    evidence(base, ['src/a/x.ts'], { graphBaseCommit: 'main' }),
    evidence(base, ['src/a/x.ts'], { implementationCommit: base }),
    evidence(base, ['src/a/x.ts'], { implementationCommit: base.toUpperCase() }),
    evidence(base, ['src/a/x.ts'], { graphBaseCommit: commit() }),
  ];
  for (const body of bad) {
    const r = await complete(id, d, body);
    expect(r.status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`).toBe(422);
    expect(r.body).toMatchObject({ code: 'AGENT_RUNTIME_ERROR', stage: 'completion' });
  }
  expect(await cursor(t.admin, id)).toBe(before);
  const graph = await record(id);
  expect(states(graph)).toEqual({ a: 'RUNNING', b: 'WAITING' });
  expect(subtaskOf(graph, 'a')).toMatchObject({ implementationCommit: null, evidence: null, lastError: null });
  expect((await implementer(t, d).get('/v1/me')).status).toBe(200);
});

it('7. a complete naming an earlier dispatch’s attempt is 409 and changes nothing', async () => {
  const id = await createGraph({ a: [] }, { maxConcurrency: 1 });
  const first = (await run(id)).get('a')!;
  expect(first.attempt).toBe(1);
  const f = await t.admin.post(`/v1/graphs/${id}/subtasks/a/fail`, { attempt: 1, code: 'AGENT_EXIT_NONZERO', message: 'exit 1', exitCode: 1 });
  expect(f.status, JSON.stringify(f.body)).toBe(200);
  expect((await t.admin.post(`/v1/graphs/${id}/resume`, { subtaskId: 'a' })).body.outcomes[0].action).toBe('ready-for-explicit-dispatch');
  const second = (await run(id)).get('a')!;
  expect(second.attempt).toBe(2);
  const before = await cursor(t.admin, id);
  const stale = await t.admin.post(`/v1/graphs/${id}/subtasks/a/complete`, { attempt: 1, ...evidence(base, ['src/a/x.ts']) });
  expect(stale.status, JSON.stringify(stale.body)).toBe(409);
  expect(stale.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', details: { attempt: 2 } });
  // The first dispatch's own token is gone with its attempt.
  expect((await implementer(t, first).post(`/v1/graphs/${id}/subtasks/a/complete`, { attempt: 1, ...evidence(base, ['src/a/x.ts']) })).status).toBe(401);
  expect(await cursor(t.admin, id)).toBe(before);
  expect(states(await record(id))).toEqual({ a: 'RUNNING' });
  const ok = await complete(id, second, evidence(base, ['src/a/x.ts']));
  expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  expect(ok.body.state).toBe('SUCCEEDED');
});

it('8. authority: another Agent 403, an outsider 404, the dispatch session may act, the reviewer may not run', async () => {
  // b is agent-b's, so agent-b's sessions can see the graph (and are refused acting on a).
  const id = await createGraph({ a: [], b: [], c: [] }, { maxConcurrency: 2, implementers: { b: 'agent-b' } });
  const other = await agentSession(t, 'agent-b');
  const outsider = await t.session({ name: 'outsider' });
  const reviewer = await agentSession(t, 'reviewer');

  // The reviewer may not run the graph.
  const reviewRun = await reviewer.client.post(`/v1/graphs/${id}/run`, { baseCommit: base });
  expect(reviewRun.status, JSON.stringify(reviewRun.body)).toBe(403);
  expect(reviewRun.body.code).toBe('forbidden');
  expect((await record(id)).baseCommit).toBeNull();

  const d = (await run(id)).get('a')!;
  const before = await cursor(t.admin, id);
  const path = (act: string) => `/v1/graphs/${id}/subtasks/a/${act}`;
  const calls: [string, unknown][] = [
    ['complete', { attempt: d.attempt, ...evidence(base, ['src/a/x.ts']) }],
    ['fail', { attempt: d.attempt, code: 'AGENT_EXIT_NONZERO', message: 'no' }],
    ['heartbeat', { attempt: d.attempt }],
    ['claim', { baseCommit: base }],
  ];
  for (const [act, body] of calls) {
    const r = await other.client.post(path(act), body);
    expect(r.status, `agent-b ${act}: ${JSON.stringify(r.body)}`).toBe(403);
    expect(r.body.code).toBe('forbidden');
  }
  for (const [act, body] of calls) {
    const r = await outsider.client.post(path(act), body);
    expect(r.status, `outsider ${act}: ${JSON.stringify(r.body)}`).toBe(404);
    expect(r.body.code).toBe('graph_not_found');
  }
  for (const [act, body] of calls.slice(0, 3)) {
    const r = await reviewer.client.post(path(act), body);
    expect(r.status, `reviewer ${act}: ${JSON.stringify(r.body)}`).toBe(403);
  }
  // Nor may agent-b claim c, a READY subtask of codex.
  expect((await other.client.post(`/v1/graphs/${id}/subtasks/c/claim`, {})).status).toBe(403);
  expect(await cursor(t.admin, id)).toBe(before);
  expect(states(await record(id))).toMatchObject({ a: 'RUNNING', b: 'RUNNING', c: 'READY' });

  // The dispatch's own session heartbeats, but cannot vouch for its own work: its runner reports.
  const own = implementer(t, d);
  const hb = await own.post(path('heartbeat'), { attempt: d.attempt });
  expect(hb.status, JSON.stringify(hb.body)).toBe(200);
  expect(hb.body).toMatchObject({ ok: true, subtaskId: 'a', attempt: d.attempt });
  const self = await own.post(path('complete'), { attempt: d.attempt, ...evidence(base, ['src/a/x.ts']) });
  expect([self.status, self.body.code]).toEqual([403, 'forbidden']);
  const done = await t.admin.post(path('complete'), { attempt: d.attempt, ...evidence(base, ['src/a/x.ts']) });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  expect(done.body.state).toBe('SUCCEEDED');
});

it('9. an expired lease reads FAILED interrupted at once; heartbeat and a late complete are 409 DISPATCH_INTERRUPTED; the next write records it once', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  await t.sql`update todos set progress_at = now() - interval '2 hours' where id = ${d.todoId}`;
  const before = await cursor(t.admin, id);

  // Read before any write: FAILED interrupted, dependent BLOCKED, nothing written.
  const graph = await record(id);
  const a = subtaskOf(graph, 'a');
  expect(a.state).toBe('FAILED');
  expect(a.reason).toMatch(/^Interrupted:/);
  // Soft, so the durable half below is still checked when this read-side classification is wrong.
  expect.soft(recoveryOf(graph, 'a')).toMatchObject({ classification: 'interrupted', recoverable: true });
  expect(subtaskOf(graph, 'b').state).toBe('BLOCKED');
  expect(await cursor(t.admin, id)).toBe(before);

  // The runner's heartbeat and its late report are refused as interrupted, with the next step: the lease is gone, nothing is revived.
  const hb = await implementer(t, d).post(`/v1/graphs/${id}/subtasks/a/heartbeat`, { attempt: d.attempt });
  expect(hb.status, JSON.stringify(hb.body)).toBe(409);
  expect(hb.body).toMatchObject({ code: 'DISPATCH_INTERRUPTED', recoverable: true, details: { attempt: d.attempt } });
  expect(hb.body.detail).toContain(`coord graph resume ${id} a`);
  expect(hb.body.detail).toContain(`POST /v1/graphs/${id}/resume with {"subtaskId": "a"}`);
  const late = await t.admin.post(`/v1/graphs/${id}/subtasks/a/complete`, { attempt: d.attempt, ...evidence(base, ['src/a/x.ts']) });
  expect([late.status, late.body.code, late.body.stage]).toEqual([409, 'DISPATCH_INTERRUPTED', 'completion']);
  expect(subtaskOf(await record(id), 'a').state).toBe('FAILED');

  // A following write records it durably, with exactly one RUNNING → FAILED event.
  const r = await t.admin.post(`/v1/graphs/${id}/recover`, {});
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const events = (await lifecycle(t.admin, id, before)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED' && e.data.subtaskId === 'a');
  expect(events.map((e) => [e.data.from, e.data.to])).toEqual([['RUNNING', 'FAILED']]);
  const after = await record(id);
  expect(subtaskOf(after, 'a')).toMatchObject({
    state: 'FAILED',
    lastError: { code: 'SESSION_INTERRUPTED', classification: 'interrupted', recoverable: true },
  });
  expect(subtaskOf(after, 'a').reason).toMatch(/^Interrupted:/);
  expect(recoveryOf(after, 'a').classification).toBe('interrupted');
  expect(subtaskOf(after, 'b').state).toBe('BLOCKED');
  expect((await implementer(t, d).get('/v1/me')).status).toBe(401);
  // A repeat writes nothing more.
  const settled = await cursor(t.admin, id);
  await t.admin.post(`/v1/graphs/${id}/recover`, {});
  expect(await cursor(t.admin, id)).toBe(settled);
});

it('10. stopping the dispatch session records the subtask FAILED interrupted at once, never READY', async () => {
  const id = await createGraph({ a: [], b: ['a'] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  const before = await cursor(t.admin, id);
  const stop = await t.admin.post(`/v1/sessions/${d.session.id}/stop`);
  expect(stop.status, JSON.stringify(stop.body)).toBe(200);
  // No sweep, no further write: the event is already in the log.
  const events = (await lifecycle(t.admin, id, before)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED');
  expect(events.filter((e) => e.data.subtaskId === 'a').map((e) => [e.data.from, e.data.to])).toEqual([['RUNNING', 'FAILED']]);
  expect(events.some((e) => e.data.to === 'READY')).toBe(false);
  const graph = await record(id);
  const a = subtaskOf(graph, 'a');
  expect(a.state).toBe('FAILED');
  expect(a.reason).toMatch(/^Interrupted:/);
  expect(a.lastError).toMatchObject({ code: 'SESSION_INTERRUPTED', classification: 'interrupted' });
  expect(recoveryOf(graph, 'a').classification).toBe('interrupted');
  expect(states(graph)).toEqual({ a: 'FAILED', b: 'BLOCKED' });
  // The engine row did not reopen.
  const [row] = await t.sql<{ status: string }[]>`select status from todos where id = ${d.todoId}`;
  expect(row.status).toBe('blocked');
  // A run does not pick it up again until it is resumed.
  expect((await t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base })).body.selected).toEqual([]);
});

it('11. fleet next claims only the caller Agent’s subtask, needs a base, and respects capacity', async () => {
  const id = await createGraph({ alpha: [], beta: [], gamma: [] }, { maxConcurrency: 2, implementers: { beta: 'agent-a', gamma: 'agent-a' } });
  const worker = await agentSession(t, 'agent-a');
  const scope = `graph:${id}`;

  // No base yet: nothing claimed, with a reason; nothing written.
  const noBase = await worker.client.post('/v1/todos/next', { scope });
  expect(noBase.status, JSON.stringify(noBase.body)).toBe(200);
  expect(noBase.body.claimed).toBe(false);
  expect(noBase.body.reason).toEqual(expect.any(String));
  expect(noBase.body.dispatch).toBeUndefined();
  expect(states(await record(id))).toEqual({ alpha: 'READY', beta: 'READY', gamma: 'READY' });

  // A claim with baseCommit fixes the base (agent-a claims gamma).
  const claim = await worker.client.post(`/v1/graphs/${id}/subtasks/gamma/claim`, { baseCommit: base });
  expect(claim.status, JSON.stringify(claim.body)).toBe(200);
  expect((await record(id)).baseCommit).toBe(base);

  // next skips alpha (codex) and claims beta.
  const next = await worker.client.post('/v1/todos/next', { scope });
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  expect(next.body.claimed).toBe(true);
  expect(next.body.item).toMatchObject({ id: expect.any(String) });
  expect(next.body.dispatch).toMatchObject({
    subtaskId: 'beta',
    implementer: 'agent-a',
    attempt: 1,
    session: { token: expect.any(String), agentId: 'agent-a' },
  });
  expect(next.body.dispatch.worktree).toMatchObject({ baseCommit: base, branch: `coord/${id}/beta` });
  expect(next.body.item.id).toBe(next.body.dispatch.todoId);
  const token = next.body.dispatch.session.token as string;
  expect((await new Client(t.base, token).post(`/v1/graphs/${id}/subtasks/beta/heartbeat`, {})).status).toBe(200);
  expect(states(await record(id))).toEqual({ alpha: 'READY', beta: 'RUNNING', gamma: 'RUNNING' });

  // At capacity: nothing claimed.
  const before = await cursor(t.admin, id);
  const full = await worker.client.post('/v1/todos/next', { scope });
  expect(full.status, JSON.stringify(full.body)).toBe(200);
  expect(full.body.claimed).toBe(false);
  expect(full.body.reason).toEqual(expect.any(String));
  expect(await cursor(t.admin, id)).toBe(before);
  expect(states(await record(id))).toEqual({ alpha: 'READY', beta: 'RUNNING', gamma: 'RUNNING' });
});

it('12. a whole-graph stop stops RUNNING, READY and WAITING subtasks; the graph STOPPED; a repeat changes nothing', async () => {
  const id = await createGraph({ a: [], b: ['a'], c: [] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  expect(states(await record(id))).toEqual({ a: 'RUNNING', b: 'WAITING', c: 'READY' });
  const before = await cursor(t.admin, id);
  const r = await t.admin.post(`/v1/graphs/${id}/stop`, { reason: 'operator shutdown' });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.outcomes.map((o: any) => [o.subtaskId, o.action, o.state, o.changed])).toEqual([
    ['a', 'stopped', 'STOPPED', true],
    ['b', 'stopped', 'STOPPED', true],
    ['c', 'stopped', 'STOPPED', true],
  ]);
  expect(states(r.body.graph)).toEqual({ a: 'STOPPED', b: 'STOPPED', c: 'STOPPED' });
  expect(r.body.graph.state).toBe('STOPPED');
  for (const s of r.body.graph.subtasks) expect(s.reason).toBe('Stopped: operator shutdown');
  const events = await lifecycle(t.admin, id, before);
  expect(events.filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED').map((e) => [e.data.subtaskId, e.data.from, e.data.to])).toEqual([
    ['a', 'RUNNING', 'STOPPED'],
    ['b', 'WAITING', 'STOPPED'],
    ['c', 'READY', 'STOPPED'],
  ]);
  expect(events.filter((e) => e.event === 'TASK_GRAPH_STATUS_CHANGED').map((e) => [e.data.from, e.data.to])).toEqual([['RUNNING', 'STOPPED']]);
  // The RUNNING dispatch's token is refused afterwards.
  expect((await implementer(t, d).post(`/v1/graphs/${id}/subtasks/a/heartbeat`, {})).status).toBe(401);
  expect((await implementer(t, d).post(`/v1/graphs/${id}/subtasks/a/complete`, { attempt: d.attempt, ...evidence(base, ['src/a/x.ts']) })).status).toBe(401);
  // A repeat changes nothing.
  const settled = await cursor(t.admin, id);
  const again = await t.admin.post(`/v1/graphs/${id}/stop`, { reason: 'again' });
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  expect(again.body.outcomes.every((o: any) => o.action === 'none' && !o.changed)).toBe(true);
  expect(again.body.transitions).toEqual([]);
  expect(await cursor(t.admin, id)).toBe(settled);
  expect(subtaskOf(again.body.graph, 'a').reason).toBe('Stopped: operator shutdown');
});

it('13. resume of a healthy RUNNING subtask reuses its session and changes nothing', async () => {
  const id = await createGraph({ a: [] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  const before = await cursor(t.admin, id);
  const r = await t.admin.post(`/v1/graphs/${id}/resume`, { subtaskId: 'a' });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.outcomes[0]).toMatchObject({ subtaskId: 'a', action: 'reused-healthy-session', changed: false, state: 'RUNNING' });
  expect(r.body.dispatchRequired).toBe(false);
  expect(r.body.automaticRetry).toBe(false);
  expect(r.body.transitions).toEqual([]);
  expect(await cursor(t.admin, id)).toBe(before);
  expect((await implementer(t, d).post(`/v1/graphs/${id}/subtasks/a/heartbeat`, { attempt: d.attempt })).status).toBe(200);
});

it('14. cleanup of a RUNNING subtask reported CLEANED is recorded SKIPPED', async () => {
  const id = await createGraph({ a: [] }, { maxConcurrency: 1 });
  await run(id);
  const r = await t.admin.post(`/v1/graphs/${id}/cleanup`, { outcomes: [{ subtaskId: 'a', status: 'CLEANED' }] });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.outcomes[0]).toMatchObject({ subtaskId: 'a', action: 'cleanup-skipped', state: 'RUNNING' });
  const graph = await record(id);
  expect(subtaskOf(graph, 'a').state).toBe('RUNNING');
  expect(subtaskOf(graph, 'a').cleanup).toMatchObject({ status: 'SKIPPED', error: { code: 'TASK_STATE_CONFLICT' } });
});

it('15. integration refused until every subtask SUCCEEDED; a CONFLICT needs its conflict; a CONFLICT is not reviewable', async () => {
  const id = await createGraph({ a: [], b: [] }, { maxConcurrency: 2 });
  const ds = await run(id);
  expect((await complete(id, ds.get('a')!, evidence(base, ['src/a/x.ts']))).status).toBe(200);

  // b is RUNNING: refused.
  let before = await cursor(t.admin, id);
  const early = integrationBody(await record(id), {
    status: 'SUCCEEDED',
    aggregateCommit: commit(),
    appliedRefs: ['a', 'b'].map((sid) => ({ subtaskId: sid, commit: commit() })),
  });
  const refusedEarly = await t.admin.put(`/v1/graphs/${id}/integration`, early);
  expect(refusedEarly.status, JSON.stringify(refusedEarly.body)).toBe(409);
  expect(refusedEarly.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'integration' });
  expect(await cursor(t.admin, id)).toBe(before);

  expect((await complete(id, ds.get('b')!, evidence(base, ['src/b/x.ts']))).status).toBe(200);
  const graph = await record(id);
  expect(graph.state).toBe('REVIEWING');

  // CONFLICT without the structured conflict: refused.
  before = await cursor(t.admin, id);
  const bare = await t.admin.put(`/v1/graphs/${id}/integration`, integrationBody(graph, { status: 'CONFLICT' }));
  expect(bare.status, JSON.stringify(bare.body)).toBe(409);
  expect(bare.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'integration' });
  expect(await cursor(t.admin, id)).toBe(before);
  expect((await record(id)).integration).toBeNull();

  // CONFLICT with it: stored, ok:false.
  const conflict = {
    subtaskId: 'b',
    commit: subtaskOf(graph, 'b').implementationCommit,
    paths: ['src/shared.ts'],
    message: 'CONFLICT (content): Merge conflict in src/shared.ts',
  };
  // The conflict names the source after the applied ones: a went through, b stopped.
  const stored = await t.admin.put(
    `/v1/graphs/${id}/integration`,
    integrationBody(graph, { status: 'CONFLICT', conflict, appliedRefs: [{ subtaskId: 'a', commit: commit() }] }),
  );
  expect(stored.status, JSON.stringify(stored.body)).toBe(200);
  expect(stored.body.ok).toBe(false);
  expect(stored.body.changed).toBe(true);
  expect(stored.body.integration).toMatchObject({
    status: 'CONFLICT',
    conflict,
    aggregateCommit: null,
    sourceFingerprint: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
  });
  expect((await record(id)).integration).toMatchObject({ status: 'CONFLICT', conflict });
  const events = await lifecycle(t.admin, id, before);
  expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_INTEGRATION_RECORDED']);

  // Review of a CONFLICT integration: refused.
  before = await cursor(t.admin, id);
  const review = await t.admin.post(`/v1/graphs/${id}/review`, {
    decision: 'REVIEW_APPROVED',
    sourceFingerprint: stored.body.integration.sourceFingerprint,
    aggregateCommit: commit(),
  });
  expect(review.status, JSON.stringify(review.body)).toBe(409);
  expect(review.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'review' });
  expect(await cursor(t.admin, id)).toBe(before);
  const after = await record(id);
  expect(after.review).toBeNull();
  expect(after.state).toBe('REVIEWING');
});

it('16. a new integration record after REVIEW_APPROVED clears the review and returns the graph to REVIEWING', async () => {
  const id = await createGraph({ a: [] }, { maxConcurrency: 1 });
  const d = (await run(id)).get('a')!;
  expect((await complete(id, d, evidence(base, ['src/a/x.ts']))).status).toBe(200);
  const graph = await record(id);
  const first = commit();
  const applied = [{ subtaskId: 'a', commit: commit() }];
  const rec = await t.admin.put(`/v1/graphs/${id}/integration`, integrationBody(graph, { status: 'SUCCEEDED', appliedRefs: applied, aggregateCommit: first }));
  expect(rec.status, JSON.stringify(rec.body)).toBe(200);
  const fingerprint = rec.body.integration.sourceFingerprint;
  const reviewer = await agentSession(t, 'reviewer');
  const ok = await reviewer.client.post(`/v1/graphs/${id}/review`, { decision: 'REVIEW_APPROVED', sourceFingerprint: fingerprint, aggregateCommit: first });
  expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  expect(ok.body.state).toBe('APPROVED');

  const before = await cursor(t.admin, id);
  const second = commit();
  const again = await t.admin.put(
    `/v1/graphs/${id}/integration`,
    integrationBody(graph, { status: 'SUCCEEDED', appliedRefs: [{ subtaskId: 'a', commit: commit() }], aggregateCommit: second }),
  );
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  expect(again.body.changed).toBe(true);
  expect(again.body.state).toBe('REVIEWING');
  expect(again.body.integration).toMatchObject({ aggregateCommit: second, sourceFingerprint: fingerprint });
  expect(again.body.graph.review).toBeNull();
  const after = await record(id);
  expect(after.state).toBe('REVIEWING');
  expect(after.review).toBeNull();
  const events = await lifecycle(t.admin, id, before);
  expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_INTEGRATION_RECORDED', 'TASK_GRAPH_STATUS_CHANGED']);
  expect(events[1].data).toMatchObject({ from: 'APPROVED', to: 'REVIEWING' });
  // The old approval's head is stale now; the new one can be reviewed.
  const stale = await reviewer.client.post(`/v1/graphs/${id}/review`, { decision: 'REVIEW_APPROVED', sourceFingerprint: fingerprint, aggregateCommit: first });
  expect(stale.status).toBe(409);
  expect(stale.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'review' });
  const fresh = await reviewer.client.post(`/v1/graphs/${id}/review`, { decision: 'REVIEW_APPROVED', sourceFingerprint: fingerprint, aggregateCommit: second });
  expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
  expect(fresh.body.state).toBe('APPROVED');
});
