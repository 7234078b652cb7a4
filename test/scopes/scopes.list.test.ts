import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { listLimit: 50 } });
});
afterAll(async () => t?.close());

const all = async (c: TestApp['admin'], limit?: number) => {
  const out: any[] = [];
  let cursor: string | undefined;
  do {
    const q = new URLSearchParams({ ...(limit ? { limit: String(limit) } : {}), ...(cursor ? { cursor } : {}) });
    const r = await c.get(`/v1/scopes?${q}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body.scopes);
    cursor = r.body.nextCursor ?? undefined;
  } while (cursor);
  return out;
};

describe('GET /v1/scopes (the lists a caller may read, with progress)', () => {
  it('counts stored statuses per scope, shows a session its own list (even empty) and scenarios it is in, and nothing else', async () => {
    const a = await t.session({ name: 'a' });
    const child = await t.session({ name: 'a-child', parentId: a.id, by: a.client });
    const b = await t.session({ name: 'b' });
    const lonely = await t.session({ name: 'lonely' });
    const x = await addItem(a.client, 'x');
    await addItem(a.client, 'y', { dependsOn: [x.id] });
    const z = await addItem(a.client, 'z');
    expect((await a.client.post(`/v1/todos/${x.id}/claim`)).status).toBe(200);
    expect((await a.client.post(`/v1/todos/${x.id}/done`)).status).toBe(200);
    expect((await a.client.post(`/v1/todos/${z.id}/claim`)).status).toBe(200);
    await addItem(b.client, 'b1');
    const sc = await t.admin.post('/v1/scenarios', { name: 'scopes-sc', members: [{ name: 'm', session: child.id, task: 'do it' }] });
    expect(sc.status, JSON.stringify(sc.body)).toBe(201);
    const scenarioScope = sc.body.scenario.scope;

    const asA = await all(a.client);
    expect(asA.map((s) => s.scope)).toEqual([`session:${a.id}`]);
    expect(asA[0]).toEqual({
      scope: `session:${a.id}`,
      kind: 'session',
      name: a.id,
      total: 3,
      done: 1,
      inProgress: 1,
      blocked: 0,
      todo: 1,
      waiting: 0,
      override: true,
    });

    const asChild = await all(child.client);
    expect(asChild.map((s) => s.scope).sort()).toEqual([scenarioScope, `session:${a.id}`].sort());
    expect(asChild.find((s) => s.scope === `session:${a.id}`).override).toBe(false);
    expect(asChild.find((s) => s.scope === scenarioScope)).toMatchObject({ kind: 'scenario', name: 'scopes-sc', total: 1, todo: 1 });

    expect((await all(b.client)).map((s) => s.scope)).toEqual([`session:${b.id}`]);
    // A session with no item yet still sees its own (empty) list.
    expect(await all(lonely.client)).toEqual([
      { scope: `session:${lonely.id}`, kind: 'session', name: lonely.id, total: 0, done: 0, inProgress: 0, blocked: 0, todo: 0, waiting: 0, override: true },
    ]);

    const asUser = (await all(t.admin)).map((s) => s.scope);
    expect(asUser).toEqual(expect.arrayContaining([`session:${a.id}`, `session:${b.id}`, scenarioScope]));
    expect(asUser).toEqual([...asUser].sort());
  });

  it('pages in scope order with no row lost or repeated, and refuses a cursor it did not issue', async () => {
    for (let i = 0; i < 7; i++) await addItem((await t.session({ name: `p${i}` })).client, 'item');
    const whole = await all(t.admin);
    const paged = await all(t.admin, 3);
    expect(paged.map((s) => s.scope)).toEqual(whole.map((s) => s.scope));
    const bad = await t.admin.get('/v1/scopes?cursor=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_cursor');
    expect((await t.admin.get('/v1/scopes?bogus=1')).status).toBe(400);
  });
});
