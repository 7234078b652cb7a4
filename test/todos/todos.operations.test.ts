import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('todo add and read (seed 000 store cases)', () => {
  it('should trim the title and normalise tags on add', async () => {
    const s = await t.session();
    const r = await s.client.post('/v1/todos', { title: '  Wire the claim CAS  ', tags: ['backend', 'backend', ' p1 ', ''] });
    expect(r.status).toBe(201);
    expect(r.body.item).toMatchObject({ title: 'Wire the claim CAS', tags: ['backend', 'p1'], status: 'todo', revision: 1, scope: `session:${s.id}` });
    expect(r.body.item.owner).toBeUndefined();
    expect(r.headers.get('etag')).toBe('"1"');
  });

  it('should refuse a whitespace title with title_required and write nothing', async () => {
    const s = await t.session();
    const r = await s.client.post('/v1/todos', { title: '   ' });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('title_required');
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    const list = await s.client.get('/v1/todos');
    expect(list.body.items).toHaveLength(0);
  });

  it('should return todo_not_found for an unknown id', async () => {
    const s = await t.session();
    const r = await s.client.get('/v1/todos/td-doesnotexist');
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('todo_not_found');
  });

  it('should refuse a grandchild, a cross-scope child and an unknown parent', async () => {
    const a = await t.session();
    const b = await t.session();
    const parent = (await a.client.post('/v1/todos', { title: 'parent' })).body.item;
    const child = (await a.client.post('/v1/todos', { title: 'child', parentId: parent.id })).body.item;
    expect(child.parentId).toBe(parent.id);
    const grandchild = await a.client.post('/v1/todos', { title: 'grandchild', parentId: child.id });
    expect(grandchild.body.code).toBe('hierarchy_too_deep');
    const cross = await t.admin.post('/v1/todos', { title: 'x', parentId: parent.id, scope: `session:${b.id}` });
    expect(cross.body.code).toBe('parent_scope_mismatch');
    const unknown = await a.client.post('/v1/todos', { title: 'x', parentId: 'td-nope' });
    expect(unknown.body.code).toBe('parent_not_found');
    expect(unknown.status).toBe(422);
  });

  it('should remove a parent together with its sub-items', async () => {
    const a = await t.session();
    const parent = (await a.client.post('/v1/todos', { title: 'parent' })).body.item;
    const child = (await a.client.post('/v1/todos', { title: 'child', parentId: parent.id })).body.item;
    const r = await a.client.del(`/v1/todos/${parent.id}`);
    expect(r.status).toBe(200);
    expect(r.body.removed.sort()).toEqual([parent.id, child.id].sort());
    expect((await a.client.get(`/v1/todos/${child.id}`)).status).toBe(404);
    expect((await a.client.del(`/v1/todos/${parent.id}`)).status).toBe(404);
  });
});

describe('transitions and authority (seed 000 state machine)', () => {
  it('should refuse done on an unclaimed item, even for a user', async () => {
    const a = await t.session();
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    const r = await t.admin.post(`/v1/todos/${item.id}/done`);
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('invalid_transition');
    expect(r.body.detail).toContain('claim it first');
  });

  it('should let the owner, the subtree root and a user complete, but not a sibling', async () => {
    const root = await t.session({ name: 'root' });
    const c1 = await t.session({ parentId: root.id, by: root.client });
    const c2 = await t.session({ parentId: root.id, by: root.client });
    const mk = async () => (await c1.client.post('/v1/todos', { title: 'w' })).body.item;
    const i1 = await mk();
    expect((await c1.client.post(`/v1/todos/${i1.id}/claim`)).body.item.owner).toBe(c1.id);
    const sib = await c2.client.post(`/v1/todos/${i1.id}/done`);
    expect(sib.status).toBe(403);
    expect(sib.body.detail).toContain('only the owner');
    expect((await c1.client.post(`/v1/todos/${i1.id}/done`)).body.item.status).toBe('done');
    const i2 = await mk();
    await c1.client.post(`/v1/todos/${i2.id}/claim`);
    const byRoot = await root.client.post(`/v1/todos/${i2.id}/done`);
    expect(byRoot.body.item).toMatchObject({ status: 'done', owner: c1.id });
    const i3 = await mk();
    await c1.client.post(`/v1/todos/${i3.id}/claim`);
    expect((await t.admin.post(`/v1/todos/${i3.id}/done`)).body.item.status).toBe('done');
  });

  it('should move claimed → blocked → done directly and keep the block note', async () => {
    const a = await t.session();
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    await a.client.post(`/v1/todos/${item.id}/claim`);
    const blocked = await a.client.post(`/v1/todos/${item.id}/block`, { note: 'waiting on API review' });
    expect(blocked.body.item).toMatchObject({ status: 'blocked', note: 'waiting on API review', whyBlocked: 'waiting on API review' });
    expect((await a.client.post(`/v1/todos/${item.id}/block`)).body.code).toBe('invalid_transition');
    const done = await a.client.post(`/v1/todos/${item.id}/done`);
    expect(done.body.item.status).toBe('done');
    const reopened = await a.client.post(`/v1/todos/${item.id}/reopen`);
    expect(reopened.body.item.status).toBe('todo');
    expect(reopened.body.item.owner).toBeUndefined();
    const again = await a.client.post(`/v1/todos/${item.id}/reopen`);
    expect(again.body.code).toBe('invalid_transition');
    // The refusal names the states the move starts from, so the next step is plain.
    expect(again.body.detail).toContain('only from in-progress, done, blocked');
  });

  it('tells the loser of a claim to take another ready item with next, and that next works', async () => {
    const a = await t.session();
    const b = await t.session({ parentId: a.id, by: a.client });
    const item = (await a.client.post('/v1/todos', { title: 'contested' })).body.item;
    const spare = (await a.client.post('/v1/todos', { title: 'spare' })).body.item;
    await a.client.post(`/v1/todos/${item.id}/claim`);
    const lost = await b.client.post(`/v1/todos/${item.id}/claim`);
    expect([lost.status, lost.body.code]).toEqual([409, 'already_claimed']);
    expect(lost.body.detail).toContain('take another ready item with next');
    expect((await b.client.post('/v1/todos/next', {})).body.item.id).toBe(spare.id);
  });

  it('should refuse a claim by a user with claim_requires_session', async () => {
    const a = await t.session();
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    const r = await t.admin.post(`/v1/todos/${item.id}/claim`);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('claim_requires_session');
  });

  it('should hide an item from a session outside its scope and refuse its claim', async () => {
    const a = await t.session();
    const b = await t.session();
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    expect((await b.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(404);
    // Another subtree's list reads like one that does not exist.
    expect((await b.client.get(`/v1/todos?scope=session:${a.id}`)).body.code).toBe('scope_not_found');
  });

  it('should let a descendant claim in its root scope and record it as owner', async () => {
    const root = await t.session();
    const child = await t.session({ parentId: root.id, by: root.client });
    const both = [await root.client.post('/v1/todos', { title: 'p' }), await child.client.post('/v1/todos', { title: 'c' })];
    expect(both.map((r) => r.body.item.scope)).toEqual([`session:${root.id}`, `session:${root.id}`]);
    expect((await child.client.get('/v1/todos')).body.items).toHaveLength(2);
    const claim = await child.client.post(`/v1/todos/${both[0].body.item.id}/claim`);
    expect(claim.body.item.owner).toBe(child.id);
  });

  it('should anchor a child of a system session to itself', async () => {
    const orch = await t.session({ systemKind: 'orchestrator' });
    const child = await t.session({ parentId: orch.id, by: orch.client });
    const me = await child.client.get('/v1/me');
    expect(me.body.scope).toBe(`session:${child.id}`);
    expect((await child.client.get(`/v1/todos?scope=session:${orch.id}`)).body.code).toBe('scope_not_found');
    expect((await child.client.get('/v1/todos')).body.items).toHaveLength(0);
  });

  it('should reserve an assigned item for its assignee and let only override authority assign', async () => {
    const root = await t.session();
    const c1 = await t.session({ parentId: root.id, by: root.client });
    const c2 = await t.session({ parentId: root.id, by: root.client });
    const planted = await c1.client.post('/v1/todos', { title: 'x', assignee: c2.id });
    expect(planted.status).toBe(403);
    expect((await c1.client.post('/v1/todos', { title: 'self', assignee: c1.id })).status).toBe(201);
    const item = (await root.client.post('/v1/todos', { title: 'for c2', assignee: c2.id })).body.item;
    expect(item.assignee).toBe(c2.id);
    expect((await c1.client.post(`/v1/todos/${item.id}/claim`)).body.code).toBe('reserved_for_assignee');
    const next = await c1.client.post('/v1/todos/next');
    expect(next.body.item?.id).not.toBe(item.id);
    expect((await c1.client.put(`/v1/todos/${item.id}/assignee`, { assignee: c1.id })).status).toBe(403);
    expect((await t.admin.put(`/v1/todos/${item.id}/assignee`, { assignee: null })).body.item.assignee).toBeUndefined();
  });

  it('should hand out items in position order with next and report nothing eligible without an error', async () => {
    const a = await t.session();
    const ids = [];
    for (const title of ['one', 'two', 'three']) ids.push((await a.client.post('/v1/todos', { title })).body.item.id);
    const got = [];
    for (let i = 0; i < 3; i++) got.push((await a.client.post('/v1/todos/next')).body.item.id);
    expect(got).toEqual(ids);
    const none = await a.client.post('/v1/todos/next');
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ claimed: false });
  });
});

describe('edit', () => {
  it('should sort tags, bump the revision once and honour If-Match', async () => {
    const a = await t.session();
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    const r = await a.client.patch(`/v1/todos/${item.id}`, { title: 'y', tags: ['z', 'a'] }, { 'if-match': '"1"' });
    expect(r.body.item).toMatchObject({ title: 'y', tags: ['a', 'z'], revision: 2 });
    const stale = await a.client.patch(`/v1/todos/${item.id}`, { title: 'z' }, { 'if-match': '"1"' });
    expect(stale.status).toBe(412);
    expect(stale.body.code).toBe('revision_mismatch');
    expect((await a.client.patch(`/v1/todos/${item.id}`, { title: '  ' })).body.code).toBe('title_required');
    expect((await a.client.get(`/v1/todos/${item.id}`)).body.item.title).toBe('y');
    const empty = await a.client.patch(`/v1/todos/${item.id}`, {});
    expect(empty.body.item.revision).toBe(2);
  });

  it('should filter the list by status, tag and owner and paginate without truncation', async () => {
    const a = await t.session();
    for (let i = 0; i < 7; i++) await a.client.post('/v1/todos', { title: `i${i}`, tags: i % 2 ? ['odd'] : [] });
    const first = (await a.client.post('/v1/todos/next')).body.item;
    expect((await a.client.get('/v1/todos?status=in-progress')).body.items.map((i: any) => i.id)).toEqual([first.id]);
    expect((await a.client.get('/v1/todos?tag=odd')).body.items).toHaveLength(3);
    expect((await a.client.get('/v1/todos?owner=me')).body.items).toHaveLength(1);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await a.client.get(`/v1/todos?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.items.map((i: any) => i.title));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['i0', 'i1', 'i2', 'i3', 'i4', 'i5', 'i6']);
  });
});
