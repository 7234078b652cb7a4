/** `POST /v1/todos/bulk`: many items in one transaction, all or nothing, with every rule of a single add. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { example, registerAgents } from '../graphs/graphs.helpers.js';
import { addItem as add, startTestApp, type Client, type TestApp } from '../helpers/app.js';

const LIMIT = 25;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { listLimit: LIMIT } });
});
afterAll(async () => t?.close());

const bulk = (c: Client, body: unknown) => c.post('/v1/todos/bulk', body);
const events = async (c: Client, scope: string) => (await c.get(`/v1/events/log?topic=todo:${scope}&after=0&limit=1000`)).body.events;

/** Everything a refused request could have written in `scope`: items, events, the scope's last position. */
async function footprint(scope: string) {
  const [{ items }] = await t.sql<{ items: number }[]>`select count(*)::int as items from todos where scope = ${scope}`;
  const [{ events: n }] = await t.sql<{ events: number }[]>`select count(*)::int as events from events where topic = ${`todo:${scope}`}`;
  const [pos] = await t.sql<{ last_position: number }[]>`select last_position from scopes where scope = ${scope}`;
  const [{ edges }] = await t.sql<{ edges: number }[]>`
    select count(*)::int as edges from todo_dependencies e join todos x on x.id = e.todo_id where x.scope = ${scope}`;
  return { items, events: n, lastPosition: pos?.last_position ?? null, edges };
}

describe('bulk add', () => {
  it('should add items in request order with positions after the last one, refs for parents and dependencies, and one added event each', async () => {
    const s = await t.session();
    const scope = `session:${s.id}`;
    const before = await add(s.client, 'existing');
    const r = await bulk(s.client, {
      items: [
        { ref: 'api', title: '  Wire the API  ', tags: ['b', ' a', 'b'] },
        { ref: 'api-test', title: 'Test the API', parentRef: 'api', dependsOn: ['api'] },
        { ref: 'ui', title: 'Build the UI', dependsOn: [before.id], note: 'from the mock-ups' },
        { title: 'Publish', dependsOn: ['ui', 'api', 'api', before.id] },
        { title: 'Under the existing one', parentId: before.id },
      ],
    });
    expect(r.status).toBe(201);
    const items = r.body.items;
    expect(items.map((i: any) => i.title)).toEqual(['Wire the API', 'Test the API', 'Build the UI', 'Publish', 'Under the existing one']);
    expect(items.map((i: any) => i.position)).toEqual([2, 3, 4, 5, 6]);
    expect(r.body.refs).toEqual({ api: items[0].id, 'api-test': items[1].id, ui: items[2].id });
    expect(items[0]).toMatchObject({ scope, tags: ['a', 'b'], status: 'todo', ready: true, revision: 1, dependsOn: [] });
    expect(items[1]).toMatchObject({ parentId: items[0].id, dependsOn: [items[0].id], blockedBy: [items[0].id], status: 'blocked', ready: false });
    expect(items[2]).toMatchObject({ note: 'from the mock-ups', dependsOn: [before.id], status: 'blocked' });
    expect(items[3].dependsOn).toEqual([items[0].id, items[2].id, before.id].sort());
    expect(items[4].parentId).toBe(before.id);
    // The reads agree with the answer, and the next single add continues after the batch.
    expect((await s.client.get(`/v1/todos/${items[1].id}`)).body.item).toEqual(items[1]);
    expect((await add(s.client, 'after')).position).toBe(7);
    const ev = (await events(s.client, scope)).filter((e: any) => e.event === 'added');
    expect(ev.map((e: any) => e.data.id)).toEqual([before.id, ...items.map((i: any) => i.id), expect.any(String)]);
    // The single add's payload.
    expect(ev[2].data).toEqual({ event: 'added', id: items[1].id, scope, status: 'blocked', revision: 1, blockedBy: [items[0].id] });
    // The readiness cache is right: finishing the dependency readies the dependent.
    await s.client.post(`/v1/todos/${items[0].id}/claim`);
    await s.client.post(`/v1/todos/${items[0].id}/done`);
    expect((await s.client.get(`/v1/todos/${items[1].id}`)).body.item).toMatchObject({ status: 'todo', ready: true });
  });

  it('should write nothing when an item in the middle is bad, naming its index and ref', async () => {
    const s = await t.session();
    const scope = `session:${s.id}`;
    const dep = await add(s.client, 'dependency');
    const empty = await t.session();
    const fresh = `session:${empty.id}`;
    // Good items around the bad one (index 2): a ref to the first item and, in `scope`, an existing dependency.
    const good = (i: number, target: string) => ({ ref: `r${i}`, title: `item ${i}`, dependsOn: i === 0 ? [] : ['r0', ...(target === scope ? [dep.id] : [])] });
    const cases: [unknown, string, Record<string, unknown>][] = [
      [{ ref: 'bad', title: 'x'.repeat(501) }, 'title_too_long', { limit: 500 }],
      [{ ref: 'bad', title: '   ' }, 'title_required', {}],
      [{ ref: 'bad', title: 'x', note: 'n'.repeat(2001) }, 'note_too_long', { limit: 2000 }],
      [{ ref: 'bad', title: 'x', dependsOn: ['td-0000000000000000'] }, 'dependency_not_found', { dependency: 'td-0000000000000000' }],
      [{ ref: 'bad', title: 'x', dependsOn: [' '] }, 'dependency_empty', {}],
      [{ ref: 'bad', title: 'x', dependsOn: ['nobody'] }, 'unknown_ref', { dependency: 'nobody' }],
      [{ ref: 'bad', title: 'x', dependsOn: ['bad'] }, 'dependency_self', { dependency: 'bad' }],
      [{ ref: 'bad', title: 'x', parentRef: 'nobody' }, 'unknown_ref', { parentRef: 'nobody' }],
      [{ ref: 'bad', title: 'x', parentRef: 'r1', parentId: dep.id }, 'validation_failed', {}],
      [{ ref: 'bad', title: 'x', parentId: 'td-0000000000000000' }, 'parent_not_found', {}],
      [{ ref: 'bad', title: 'x', assignee: 's-nobody' }, 'invalid_assignee', {}],
      [{ ref: 'td-bad', title: 'x' }, 'invalid_ref', {}],
      [{ ref: ' bad', title: 'x' }, 'invalid_ref', {}],
      [{ ref: 'r0', title: 'x' }, 'duplicate_ref', { firstIndex: 0 }],
    ];
    for (const target of [scope, fresh]) {
      const was = await footprint(target);
      for (const [bad, code, extra] of cases) {
        const items = [good(0, target), good(1, target), bad, good(3, target)];
        const r = await bulk(t.admin, { scope: target, items });
        const ref = (bad as { ref: string }).ref;
        expect([code, r.status, r.body.code]).toEqual([code, code === 'validation_failed' ? 400 : 422, code]);
        expect(r.body).toMatchObject({ index: 2, ref, ...extra });
        expect(r.body.detail).toMatch(/^items\[2\] \(ref ".*"\): /);
        expect(await footprint(target)).toEqual(was);
      }
    }
    // A dependency in another scope, and one the caller cannot see (existence is not leaked).
    const foreign = await add(empty.client, 'elsewhere');
    const mismatch = await bulk(t.admin, { scope, items: [good(0, scope), { title: 'x', dependsOn: [foreign.id] }] });
    expect(mismatch.body).toMatchObject({ code: 'dependency_scope_mismatch', index: 1, dependency: foreign.id });
    expect(mismatch.body.ref).toBeUndefined();
    const hidden = await bulk(s.client, { items: [{ title: 'x', dependsOn: [foreign.id] }] });
    expect(hidden.body).toMatchObject({ code: 'dependency_not_found', index: 0 });
    const hiddenParent = await bulk(s.client, { items: [{ title: 'x', parentId: foreign.id }] });
    expect(hiddenParent.body).toMatchObject({ code: 'parent_not_found', index: 0 });
    expect(await footprint(scope)).toMatchObject({ items: 1 });
  });

  it('should keep sub-items one level deep, among new items and under existing ones', async () => {
    const s = await t.session();
    const top = await add(s.client, 'top');
    const child = await add(s.client, 'child', { parentId: top.id });
    const deep = await bulk(s.client, {
      items: [
        { ref: 'a', title: 'a' },
        { ref: 'b', title: 'b', parentRef: 'a' },
        { ref: 'c', title: 'c', parentRef: 'b' },
      ],
    });
    expect(deep.body).toMatchObject({ status: 422, code: 'hierarchy_too_deep', index: 2, ref: 'c' });
    // The parent's own parent may come later in the request: still two levels.
    const later = await bulk(s.client, {
      items: [
        { ref: 'c', title: 'c', parentRef: 'b' },
        { ref: 'b', title: 'b', parentRef: 'a' },
        { ref: 'a', title: 'a' },
      ],
    });
    expect(later.body).toMatchObject({ code: 'hierarchy_too_deep', index: 0 });
    const self = await bulk(s.client, { items: [{ ref: 'a', title: 'a', parentRef: 'a' }] });
    expect(self.body).toMatchObject({ code: 'invalid_ref', index: 0 });
    const underChild = await bulk(s.client, { items: [{ title: 'a' }, { title: 'b', parentId: child.id }] });
    expect(underChild.body).toMatchObject({ code: 'hierarchy_too_deep', index: 1 });
    const ok = await bulk(s.client, {
      items: [
        { ref: 'p', title: 'p' },
        { title: 'q', parentRef: 'p' },
        { title: 'r', parentId: top.id },
      ],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.items.map((i: any) => i.parentId)).toEqual([undefined, ok.body.items[0].id, top.id]);
  });

  it('should refuse a cycle among the new items, naming it, and accept the same graph without the closing edge', async () => {
    const s = await t.session();
    const scope = `session:${s.id}`;
    const was = await footprint(scope);
    const items = [
      { ref: 'start', title: 'start', dependsOn: ['a'] },
      { ref: 'a', title: 'a', dependsOn: ['b'] },
      { ref: 'b', title: 'b', dependsOn: ['c'] },
      { ref: 'c', title: 'c', dependsOn: ['a'] },
      { ref: 'free', title: 'free' },
    ];
    const r = await bulk(s.client, { items });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: 'dependency_cycle', index: 1, ref: 'a', cycle: ['a', 'b', 'c', 'a'] });
    expect(r.body.detail).toBe('items[1] (ref "a"): todo dependency cycle among the new items: a → b → c → a');
    const two = await bulk(s.client, {
      items: [
        { ref: 'x', title: 'x', dependsOn: ['y'] },
        { ref: 'y', title: 'y', dependsOn: ['x'] },
      ],
    });
    expect(two.body).toMatchObject({ code: 'dependency_cycle', index: 0, cycle: ['x', 'y', 'x'] });
    expect(await footprint(scope)).toEqual(was);
    const acyclic = items.map((i) => (i.ref === 'c' ? { ...i, dependsOn: ['free'] } : i));
    const ok = await bulk(s.client, { items: acyclic });
    expect(ok.status).toBe(201);
    expect(ok.body.items.map((i: any) => i.ready)).toEqual([false, false, false, false, true]);
  });

  it('should take at most list_limit items', async () => {
    const s = await t.session();
    const scope = `session:${s.id}`;
    const n = (k: number) => Array.from({ length: k }, (_, i) => ({ title: `item ${i}` }));
    const was = await footprint(scope);
    const over = await bulk(s.client, { items: n(LIMIT + 1) });
    expect(over.status).toBe(422);
    expect(over.body).toMatchObject({ code: 'too_many_items', limit: LIMIT, count: LIMIT + 1 });
    expect(over.body.detail).toContain(`the limit is ${LIMIT}`);
    expect(await footprint(scope)).toEqual(was);
    const full = await bulk(s.client, { items: n(LIMIT) });
    expect(full.status).toBe(201);
    expect(full.body.items).toHaveLength(LIMIT);
    const none = await bulk(s.client, { items: [] });
    expect([none.status, none.body]).toEqual([201, { items: [], refs: {} }]);
  });

  it('should apply the assignee rules of a single add', async () => {
    const root = await t.session();
    const member = await t.session({ parentId: root.id, by: root.client });
    const otherTeam = await t.session();
    // The subtree root (override authority) may reserve for a member; a member only for itself.
    const ok = await bulk(root.client, { items: [{ title: 'a', assignee: member.id }, { title: 'b', assignee: member.id }, { title: 'c' }] });
    expect(ok.status).toBe(201);
    expect(ok.body.items.map((i: any) => i.assignee)).toEqual([member.id, member.id, undefined]);
    const mine = await bulk(member.client, { items: [{ title: 'mine', assignee: ` ${member.id} ` }] });
    expect(mine.body.items[0].assignee).toBe(member.id);
    const forbidden = await bulk(member.client, { items: [{ title: 'a' }, { title: 'b', assignee: root.id }] });
    expect(forbidden.body).toMatchObject({ status: 403, code: 'forbidden', index: 1 });
    const foreign = await bulk(root.client, { items: [{ title: 'a' }, { title: 'b', ref: 'b', assignee: otherTeam.id }] });
    expect(foreign.body).toMatchObject({ status: 422, code: 'invalid_assignee', index: 1, ref: 'b' });
  });

  it('should refuse graph scopes, other scopes and per-item scopes like a single add', async () => {
    await registerAgents(t.admin);
    expect((await t.admin.post('/v1/graphs', example('task-graph'))).status).toBe(201);
    const graph = await bulk(t.admin, { scope: 'graph:task-product-slice', items: [{ title: 'sneaky' }] });
    expect([graph.status, graph.body.code]).toEqual([409, 'managed_by_graph']);
    const s = await t.session();
    const other = await t.session();
    const outside = await bulk(s.client, { scope: `session:${other.id}`, items: [{ title: 'x' }] });
    expect([outside.status, outside.body.code]).toEqual([404, 'scope_not_found']);
    const perItem = await bulk(s.client, { items: [{ title: 'x', scope: `session:${s.id}` }] });
    expect([perItem.status, perItem.body.code]).toEqual([400, 'validation_failed']);
    expect((await bulk(t.admin, { items: [{ title: 'x' }] })).body.code).toBe('no_session_context');
  });
});
