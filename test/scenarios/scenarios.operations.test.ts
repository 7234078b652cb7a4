import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

let n = 0;
const uniq = (base: string) => `${base}-${++n}`;

/** A user starts a scenario with created members; returns clients by member name. */
async function start(members: Record<string, unknown>[], opts: { name?: string; orchestrator?: string; by?: Client } = {}) {
  const name = opts.name ?? uniq('strath');
  const r = await (opts.by ?? t.admin).post('/v1/scenarios', { name, members, ...(opts.orchestrator ? { orchestrator: opts.orchestrator } : {}) });
  if (r.status !== 201) throw new Error(`scenario create failed: ${r.status} ${JSON.stringify(r.body)}`);
  const clients: Record<string, Client> = {};
  for (const [m, token] of Object.entries<string>(r.body.tokens)) clients[m] = t.admin.as(token);
  const orch = r.body.orchestratorToken ? t.admin.as(r.body.orchestratorToken) : undefined;
  const member = (m: string) => r.body.scenario.members.find((x: any) => x.name === m);
  return { name, body: r.body, scenario: r.body.scenario, clients, orch, member };
}

describe('scenario creation (seed 000 “In scenarios”)', () => {
  it('should seed one assigned, ownerless item per member with a task, and none for a prompt-only member', async () => {
    const s = await start([{ name: 'api', task: '  Build the API  ' }, { name: 'ui', task: 'Build the UI', dependsOn: ['api'] }, { name: 'reviewer' }]);
    expect(s.scenario.scope).toBe(`scenario:${s.scenario.id}`);
    expect(s.scenario.id).toMatch(/^sc-[0-9a-f]{16}$/);
    expect(Object.keys(s.body.tokens).sort()).toEqual(['api', 'reviewer', 'ui']);
    expect(s.orch).toBeDefined();
    expect(s.member('reviewer').seedId).toBeUndefined();
    const items = (await s.orch!.get(`/v1/todos?scope=scenario:${s.name}`)).body.items;
    expect(items.map((i: any) => [i.title, i.assignee, i.owner, i.status])).toEqual([
      ['Build the API', s.member('api').sessionId, undefined, 'todo'],
      ['Build the UI', s.member('ui').sessionId, undefined, 'blocked'],
    ]);
    expect(items[1].dependsOn).toEqual([s.member('api').seedId]);
    expect(items[0].createdBy).toBe(s.scenario.scope);
    const log = (await s.orch!.get(`/v1/events/log?topic=todo:${s.scenario.scope}&after=0`)).body.events.map((e: any) => e.event);
    expect(log).toEqual(['scenario-created', 'added', 'added']);
  });

  it('should create member sessions as children of the orchestrator, anchored to themselves under a system orchestrator', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    const me = (await s.clients.a.get('/v1/me')).body;
    expect(me.session.parentId).toBe(s.scenario.orchestratorId);
    expect(me.scope).toBe(`session:${me.id}`);
    const orch = (await s.orch!.get('/v1/me')).body;
    expect(orch.session.systemKind).toBe('orchestrator');
  });

  it.each([
    ['scenario_member_unknown', [{ name: 'a', task: 'x', dependsOn: ['ghost'] }]],
    [
      'scenario_member_duplicate',
      [
        { name: 'a', task: 'x' },
        { name: 'a', task: 'y' },
      ],
    ],
    [
      'scenario_member_duplicate',
      [
        { name: 'a', task: 'x' },
        { name: 'b', task: 'y', dependsOn: ['a', 'a'] },
      ],
    ],
    ['scenario_member_self_dependency', [{ name: 'a', task: 'x', dependsOn: ['a'] }]],
    ['scenario_dependency_without_task', [{ name: 'a' }, { name: 'b', task: 'y', dependsOn: ['a'] }]],
    [
      'scenario_dependent_without_task',
      [
        { name: 'a', task: 'x' },
        { name: 'b', dependsOn: ['a'] },
      ],
    ],
    [
      'scenario_dependency_cycle',
      [
        { name: 'a', task: 'x', dependsOn: ['c'] },
        { name: 'b', task: 'y', dependsOn: ['a'] },
        { name: 'c', task: 'z', dependsOn: ['b'] },
      ],
    ],
    ['title_required', [{ name: 'a', task: '   ' }]],
  ])('should refuse an invalid member list with %s and write nothing', async (code, members) => {
    const count = async () =>
      (await t.sql<{ n: number }[]>`select (select count(*) from scenarios) + (select count(*) from sessions) + (select count(*) from todos) as n`)[0].n;
    const before = await count();
    const r = await t.admin.post('/v1/scenarios', { name: uniq('bad'), members });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe(code);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(await count()).toBe(before);
  });

  it('should name the cycle path in the problem', async () => {
    const r = await t.admin.post('/v1/scenarios', {
      name: uniq('cyc'),
      members: [
        { name: 'a', task: 'x', dependsOn: ['b'] },
        { name: 'b', task: 'y', dependsOn: ['a'] },
      ],
    });
    expect(r.body.cycle).toEqual(['a', 'b', 'a']);
  });

  it('should refuse a second scenario with the same name with scenario_name_taken and roll back its sessions', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    const [{ n: before }] = await t.sql<{ n: number }[]>`select count(*)::int as n from sessions`;
    const r = await t.admin.post('/v1/scenarios', { name: s.name, members: [{ name: 'a', task: 'x' }] });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('scenario_name_taken');
    const [{ n: after }] = await t.sql<{ n: number }[]>`select count(*)::int as n from sessions`;
    expect(after).toBe(before);
  });

  it('should refuse a name that looks like a scenario id', async () => {
    const r = await t.admin.post('/v1/scenarios', { name: 'sc-0123456789abcdef', members: [{ name: 'a' }] });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_failed');
  });

  it('should let a session start a scenario only as its own orchestrator, with shared members from its subtree', async () => {
    const orch = await t.session({ systemKind: 'orchestrator' });
    const mine = await t.session({ parentId: orch.id, by: orch.client });
    const stranger = await t.session();
    const other = await t.session();
    const asOther = await orch.client.post('/v1/scenarios', { name: uniq('s'), orchestrator: other.id, members: [{ name: 'a' }] });
    expect(asOther.status).toBe(403);
    const withStranger = await orch.client.post('/v1/scenarios', { name: uniq('s'), members: [{ name: 'a', session: stranger.id, task: 'x' }] });
    // A session outside its subtree is one it cannot see: the 404 of a missing one.
    expect([withStranger.status, withStranger.body.code]).toEqual([404, 'session_not_found']);
    const ok = await orch.client.post('/v1/scenarios', {
      name: uniq('s'),
      members: [
        { name: 'a', session: mine.id, task: 'x' },
        { name: 'b', task: 'y' },
      ],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.scenario.orchestratorId).toBe(orch.id);
    expect(ok.body.orchestratorToken).toBeUndefined();
    expect(Object.keys(ok.body.tokens)).toEqual(['b']);
    expect(ok.body.scenario.members.find((m: any) => m.name === 'a')).toMatchObject({ sessionId: mine.id, shared: true });
  });

  it('should refuse an unknown or stopped member session', async () => {
    const unknown = await t.admin.post('/v1/scenarios', { name: uniq('s'), members: [{ name: 'a', session: 's-0000000000000000' }] });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('session_not_found');
    const stopped = await t.session();
    await t.admin.post(`/v1/sessions/${stopped.id}/stop`);
    const r = await t.admin.post('/v1/scenarios', { name: uniq('s'), members: [{ name: 'a', session: stopped.id }] });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('session_not_active');
  });
});

describe('scenario scope (docs/seeds/todo-list.md §15, ops)', () => {
  it('should put a member’s add in the scenario scope and refuse an outsider’s add', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    const add = await s.clients.a.post('/v1/todos', { title: 'Draft the release notes', scope: `scenario:${s.name}` });
    expect(add.status).toBe(201);
    expect(add.body.item.scope).toBe(s.scenario.scope);
    const byId = await s.clients.a.post('/v1/todos', { title: 'by id', scope: s.scenario.scope });
    expect(byId.body.item.scope).toBe(s.scenario.scope);
    const outsider = await t.session();
    const refused = await outsider.client.post('/v1/todos', { title: 'x', scope: `scenario:${s.name}` });
    // The seed's refusal, as the 404 of a scenario that does not exist.
    expect(refused.status).toBe(404);
    expect(refused.body.detail).toBe(`scenario "${s.name}" not found, or not authorized for its todo list; check the scope (GET /v1/me names your own)`);
    expect((await outsider.client.post('/v1/todos', { title: 'x', scope: 'scenario:no-such-scenario' })).body.detail).toBe(
      refused.body.detail.replace(s.name, 'no-such-scenario'),
    );
  });

  it('should hide scenario items, lists, status and events from an outsider', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    const outsider = await t.session();
    expect((await outsider.client.get(`/v1/todos/${s.member('a').seedId}`)).status).toBe(404);
    expect((await outsider.client.get(`/v1/todos?scope=scenario:${s.name}`)).status).toBe(404);
    expect((await outsider.client.get(`/v1/scenarios/${s.name}/status`)).status).toBe(404);
    expect((await outsider.client.get(`/v1/events/log?topic=todo:${s.scenario.scope}&after=0`)).status).toBe(404);
    expect((await s.clients.a.get(`/v1/events/log?topic=todo:${s.scenario.scope}&after=0`)).status).toBe(200);
  });

  it('should let a member claim its seed with next in the scenario scope', async () => {
    const s = await start([
      { name: 'a', task: 'mine' },
      { name: 'b', task: 'theirs' },
    ]);
    const next = await s.clients.a.post('/v1/todos/next', { scope: `scenario:${s.name}` });
    expect(next.body).toMatchObject({ claimed: true, item: { id: s.member('a').seedId, owner: s.member('a').sessionId } });
    const again = await s.clients.a.post('/v1/todos/next', { scope: `scenario:${s.name}` });
    expect(again.body).toEqual({ claimed: false });
  });

  it('should let a shared member read and claim', async () => {
    const shared = await t.session();
    const s = await start([{ name: 'a', session: shared.id }]);
    const item = (await s.orch!.post('/v1/todos', { title: 'open work', scope: s.scenario.scope })).body.item;
    expect((await shared.client.get(`/v1/todos?scope=scenario:${s.name}`)).body.items).toHaveLength(1);
    expect((await shared.client.post(`/v1/todos/${item.id}/claim`)).body.item.owner).toBe(shared.id);
  });

  it('should let the orchestrator complete a member’s item but not a sibling member', async () => {
    const s = await start([
      { name: 'a', task: 'x' },
      { name: 'b', task: 'y' },
    ]);
    const seed = s.member('a').seedId;
    await s.clients.a.post(`/v1/todos/${seed}/claim`);
    const sibling = await s.clients.b.post(`/v1/todos/${seed}/done`);
    expect(sibling.status).toBe(403);
    const r = await s.orch!.post(`/v1/todos/${seed}/done`);
    expect(r.status).toBe(200);
    expect(r.body.item).toMatchObject({ status: 'done', owner: s.member('a').sessionId });
  });

  it('should answer an unknown scenario name with 404', async () => {
    const a = await t.session();
    const r = await a.client.post('/v1/todos', { title: 'x', scope: 'scenario:no-such-scenario' });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('scope_not_found');
    const st = await t.admin.get('/v1/scenarios/no-such-scenario/status');
    expect(st.status).toBe(404);
    expect(st.body.code).toBe('scenario_not_found');
  });

  it('should let only the orchestrator or a user assign, and let a user clear', async () => {
    const s = await start([
      { name: 'a', task: 'x' },
      { name: 'b', task: 'y' },
    ]);
    const seed = s.member('a').seedId;
    const byMember = await s.clients.a.put(`/v1/todos/${seed}/assignee`, { assignee: s.member('b').sessionId });
    expect(byMember.status).toBe(403);
    expect(byMember.body.detail).toContain('override authority');
    const byOrch = await s.orch!.put(`/v1/todos/${seed}/assignee`, { assignee: s.member('b').sessionId });
    expect(byOrch.body.item.assignee).toBe(s.member('b').sessionId);
    const cleared = await t.admin.put(`/v1/todos/${seed}/assignee`, { assignee: null });
    expect(cleared.body.item.assignee).toBeUndefined();
  });

  it('should not let a member plant an assigned item on a sibling, but allow self and orchestrator assignment', async () => {
    const s = await start([
      { name: 'a', task: 'x' },
      { name: 'b', task: 'y' },
    ]);
    const scope = s.scenario.scope;
    const planted = await s.clients.a.post('/v1/todos', { title: 'for b', scope, assignee: s.member('b').sessionId });
    expect(planted.status).toBe(403);
    expect((await s.clients.a.post('/v1/todos', { title: 'for me', scope, assignee: s.member('a').sessionId })).status).toBe(201);
    const byOrch = await s.orch!.post('/v1/todos', { title: 'for b', scope, assignee: s.member('b').sessionId });
    expect(byOrch.status).toBe(201);
    const status = (await s.orch!.get(`/v1/scenarios/${s.name}/status`)).body;
    expect(status.members.find((m: any) => m.name === 'b')).toMatchObject({ done: 0, total: 2 });
  });

  it('should let a member read the scenario, and answer an outsider as for a scenario that does not exist', async () => {
    const s = await start([{ name: 'a', task: 'x' }]);
    const r = await s.clients.a.get(`/v1/scenarios/${s.scenario.id}`);
    expect(r.status).toBe(200);
    expect(r.body.scenario).toMatchObject({ name: s.name, orchestratorId: s.scenario.orchestratorId });
    const outsider = await t.session();
    const refused = await outsider.client.get(`/v1/scenarios/${s.name}`);
    expect([refused.status, refused.body.code]).toEqual([404, 'scenario_not_found']);
    expect(refused.body.detail).toContain('not authorized for its todo list');
    const missing = await outsider.client.get('/v1/scenarios/no-such-scenario');
    expect(missing.body).toEqual({ ...refused.body, detail: refused.body.detail.replace(s.name, 'no-such-scenario') });
  });
});
