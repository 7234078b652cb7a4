import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { type Client, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

let n = 0;

/** Starts a scenario as a user; returns member clients, the orchestrator client and helpers. */
async function start(members: Record<string, unknown>[]) {
  const name = `derive-${++n}`;
  const r = await t.admin.post('/v1/scenarios', { name, members });
  if (r.status !== 201) throw new Error(`scenario create failed: ${r.status} ${JSON.stringify(r.body)}`);
  const clients: Record<string, Client> = {};
  for (const [m, token] of Object.entries<string>(r.body.tokens)) clients[m] = t.admin.as(token);
  const scenario = r.body.scenario;
  const member = (m: string) => scenario.members.find((x: any) => x.name === m);
  const orch = t.admin.as(r.body.orchestratorToken);
  const status = async () => (await orch.get(`/v1/scenarios/${name}/status`)).body;
  const row = async (s: any, m: string) => s.members.find((x: any) => x.name === m);
  const finish = async (m: string, id = member(m).seedId) => {
    const c = await clients[m].post(`/v1/todos/${id}/claim`);
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect((await clients[m].post(`/v1/todos/${id}/done`)).status).toBe(200);
  };
  const completions = async () =>
    (await orch.get(`/v1/events/log?topic=todo:${scenario.scope}&after=0&limit=1000`)).body.events.filter((e: any) => e.event === 'scenario-completed');
  return { name, scenario, clients, member, orch, status, row, finish, completions };
}

describe('derived completion (seed 000 “In scenarios”)', () => {
  it('should show C WAITING ON A, B, release C after A then B, and complete exactly when all are done and the result is published', async () => {
    const s = await start([
      { name: 'a', task: 'Build the API' },
      { name: 'b', task: 'Build the UI' },
      { name: 'c', task: 'Ship it', dependsOn: ['a', 'b'], requiresResult: true },
    ]);
    let st = await s.status();
    expect(await s.row(st, 'c')).toMatchObject({ waitingOn: ['a', 'b'], blockedBy: ['a', 'b'], seedStatus: 'blocked', progress: '0/1', complete: false });
    expect(await s.row(st, 'a')).toMatchObject({ waitingOn: [], seedStatus: 'todo', progress: '0/1' });
    expect(st).toMatchObject({ complete: false, done: 0, total: 3 });
    // A member's block shows its note; a dependency wait shows none.
    expect((await s.row(st, 'c')).blockNote).toBeUndefined();
    const aSeed = s.member('a').seedId;
    expect((await s.clients.a.post(`/v1/todos/${aSeed}/claim`)).status).toBe(200);
    expect((await s.clients.a.post(`/v1/todos/${aSeed}/block`, { note: 'needs the schema' })).status).toBe(200);
    expect(await s.row(await s.status(), 'a')).toMatchObject({ seedStatus: 'blocked', blockNote: 'needs the schema' });
    expect((await s.clients.a.post(`/v1/todos/${aSeed}/reopen`)).status).toBe(200);
    st = await s.status();
    const early = await s.clients.c.post(`/v1/todos/${s.member('c').seedId}/claim`);
    expect(early.body.code).toBe('dependency_blocked');

    await s.finish('a');
    st = await s.status();
    expect(await s.row(st, 'a')).toMatchObject({ complete: true, progress: '1/1' });
    expect(await s.row(st, 'c')).toMatchObject({ waitingOn: ['b'], seedStatus: 'blocked' });
    expect((await s.clients.c.get(`/v1/todos/${s.member('c').seedId}`)).body.item.ready).toBe(false);

    await s.finish('b');
    st = await s.status();
    expect(await s.row(st, 'c')).toMatchObject({ waitingOn: [], seedStatus: 'todo' });
    expect((await s.clients.c.get(`/v1/todos/${s.member('c').seedId}`)).body.item.ready).toBe(true);
    expect(st.complete).toBe(false);

    await s.finish('c');
    st = await s.status();
    expect(await s.row(st, 'c')).toMatchObject({ progress: '1/1', resultPublished: false, complete: false });
    expect(st.complete).toBe(false);
    expect(st.scenario.completedAt).toBeUndefined();
    expect(await s.completions()).toHaveLength(0);

    const pub = await s.clients.c.post(`/v1/scenarios/${s.name}/members/c/result`, { result: { url: 'https://example.test/release' } });
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({ scenarioComplete: true, member: { name: 'c', result: { url: 'https://example.test/release' } } });
    st = await s.status();
    expect(st).toMatchObject({ complete: true, done: 3, total: 3 });
    expect(st.scenario.completedAt).toBeDefined();
    const events = await s.completions();
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ event: 'scenario-completed', id: s.scenario.id, scope: s.scenario.scope, name: s.name });
    await s.status();
    await runSweep(t.sql, t.config);
    expect(await s.completions()).toHaveLength(1);
  });

  it('should report “—” for a prompt-only member and leave it out of completion', async () => {
    const s = await start([{ name: 'worker', task: 'x' }, { name: 'watcher' }]);
    let st = await s.status();
    expect(await s.row(st, 'watcher')).toMatchObject({ tracked: false, progress: '—', complete: false });
    await s.finish('worker');
    st = await s.status();
    expect(st.complete).toBe(true);
  });

  it('should complete a result-only member by publishing its result', async () => {
    const s = await start([{ name: 'analyst', requiresResult: true }]);
    let st = await s.status();
    expect(await s.row(st, 'analyst')).toMatchObject({ tracked: true, progress: '0/0', complete: false });
    await s.clients.analyst.post(`/v1/scenarios/${s.name}/members/analyst/result`, { result: 'findings' });
    st = await s.status();
    expect(st.complete).toBe(true);
    expect(await s.row(st, 'analyst')).toMatchObject({ complete: true, resultPublished: true });
  });

  it('should count sub-items a member is assigned and hold completion until they are done', async () => {
    const s = await start([{ name: 'a', task: 'parent' }]);
    const sub = await s.clients.a.post('/v1/todos', {
      title: 'step',
      scope: s.scenario.scope,
      parentId: s.member('a').seedId,
      assignee: s.member('a').sessionId,
    });
    expect(sub.status).toBe(201);
    await s.finish('a');
    let st = await s.status();
    expect(await s.row(st, 'a')).toMatchObject({ progress: '1/2', complete: false });
    await s.finish('a', sub.body.item.id);
    st = await s.status();
    expect(st.complete).toBe(true);
  });

  it('should move responsibility on reassignment while member-name dependencies keep the original seed', async () => {
    const s = await start([
      { name: 'a', task: 'x' },
      { name: 'b', task: 'y' },
      { name: 'c', task: 'z', dependsOn: ['a'] },
    ]);
    const seedA = s.member('a').seedId;
    const moved = await s.orch.put(`/v1/todos/${seedA}/assignee`, { assignee: s.member('b').sessionId });
    expect(moved.status).toBe(200);
    let st = await s.status();
    expect(await s.row(st, 'a')).toMatchObject({ tracked: false, progress: '—' });
    expect(await s.row(st, 'b')).toMatchObject({ progress: '0/2' });
    expect(await s.row(st, 'c')).toMatchObject({ waitingOn: ['a'] });
    const scenario = (await s.orch.get(`/v1/scenarios/${s.name}`)).body.scenario;
    expect(scenario.members.find((m: any) => m.name === 'a').seedId).toBe(seedA);
    await s.finish('b', seedA);
    st = await s.status();
    expect(await s.row(st, 'b')).toMatchObject({ progress: '1/2' });
    expect(await s.row(st, 'c')).toMatchObject({ waitingOn: [], seedStatus: 'todo' });
  });

  it('should record completion from the sweep when nobody reads the status, exactly once', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    await s.finish('a');
    expect(await s.completions()).toHaveLength(0);
    await Promise.all([runSweep(t.sql, t.config), runSweep(t.sql, t.config)]);
    await runSweep(t.sql, t.config);
    expect(await s.completions()).toHaveLength(1);
    const [row] = await t.sql<{ completed_at: Date | null }[]>`select completed_at from scenarios where id = ${s.scenario.id}`;
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it('should keep completedAt once recorded while the live flag follows a reopen', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    await s.finish('a');
    const first = await s.status();
    expect(first.complete).toBe(true);
    await s.orch.post(`/v1/todos/${s.member('a').seedId}/reopen`);
    const after = await s.status();
    expect(after.complete).toBe(false);
    expect(after.scenario.completedAt).toBe(first.scenario.completedAt);
  });

  it('should let only the member, the orchestrator or a user publish a result, and 404 an unknown member', async () => {
    const s = await start([{ name: 'a', requiresResult: true }, { name: 'b' }]);
    const bySibling = await s.clients.b.post(`/v1/scenarios/${s.name}/members/a/result`, { result: 1 });
    expect(bySibling.status).toBe(403);
    const outsider = await t.session();
    expect((await outsider.client.post(`/v1/scenarios/${s.name}/members/a/result`, { result: 1 })).status).toBe(404);
    const unknown = await s.orch.post(`/v1/scenarios/${s.name}/members/nobody/result`, { result: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('scenario_member_not_found');
    expect((await s.orch.post(`/v1/scenarios/${s.name}/members/a/result`, {})).body.code).toBe('validation_failed');
    expect((await s.orch.post(`/v1/scenarios/${s.name}/members/a/result`, { result: null })).status).toBe(200);
  });

  it('should render the status as the seed’s table with format=text', async () => {
    const s = await start([{ name: 'a', task: 'x' }, { name: 'c', task: 'z', dependsOn: ['a'] }, { name: 'p' }]);
    const r = await s.orch.get(`/v1/scenarios/${s.name}/status?format=text`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
    const lines = (r.body as string).trimEnd().split('\n');
    expect(lines[0]).toContain(`SCENARIO ${s.name}`);
    expect(lines[1]).toMatch(/^MEMBER\s+SESSION\s+DONE\/TOTAL\s+RESULT\s+WAITING ON$/);
    expect(lines[2]).toMatch(/^a\s+s-\w+\s+0\/1\s+-$/);
    expect(lines[3]).toMatch(/^c\s+s-\w+\s+0\/1\s+-\s+a$/);
    expect(lines[4]).toMatch(/^p\s+s-\w+\s+—\s+-$/);
  });
});

describe('progress counts (seed 000 “In gr list”)', () => {
  it('should show each session its subtree count and the scenario total only on the orchestrator', async () => {
    const s = await start([
      { name: 'a', task: 'x' },
      { name: 'b', task: 'y' },
    ]);
    await s.finish('a');
    const root = await t.session();
    const child = await t.session({ parentId: root.id, by: root.client });
    await child.client.post('/v1/todos', { title: 'mine' });
    const parent = (await root.client.post('/v1/todos', { title: 'p' })).body.item;
    await root.client.post('/v1/todos', { title: 'sub', parentId: parent.id });
    const list = async (c: Client, wide: boolean) => {
      const out: any[] = [];
      let cursor: string | null = null;
      do {
        const r: any = await c.get(`/v1/sessions?limit=1000${wide ? '&wide=true' : ''}${cursor ? `&cursor=${cursor}` : ''}`);
        out.push(...r.body.sessions);
        cursor = r.body.nextCursor;
      } while (cursor);
      return new Map(out.map((x) => [x.id, x]));
    };
    const wide = await list(t.admin, true);
    expect(wide.get(s.scenario.orchestratorId)).toMatchObject({ scenarioProgress: { done: 1, total: 2, scenarios: 1 } });
    for (const m of ['a', 'b']) {
      const row = wide.get(s.member(m).sessionId);
      expect(row.progress).toEqual({ done: 0, total: 0 });
      expect(row.scenarioProgress).toBeUndefined();
    }
    expect(wide.get(root.id).progress).toEqual({ done: 0, total: 3 });
    expect(wide.get(child.id).progress).toEqual({ done: 0, total: 3 });
    const narrow = await list(t.admin, false);
    expect(narrow.get(root.id).progress).toBeUndefined();
  });
});
