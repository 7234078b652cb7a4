import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem as add, startTestApp, type Client, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const events = async (c: Client, scope: string) => (await c.get(`/v1/events/log?topic=todo:${scope}&after=0&limit=1000`)).body.events;

/** The transactional readiness cache must equal the derivation from the edges, for every row. */
async function expectCountersConsistent() {
  const bad = await t.sql`
    select t.id, t.unfinished_deps,
           (select count(*)::int from todo_dependencies e join todos d on d.id = e.dependency_id
             where e.todo_id = t.id and d.status <> 'done') as derived
      from todos t
     where t.unfinished_deps <> (select count(*)::int from todo_dependencies e join todos d on d.id = e.dependency_id
                                  where e.todo_id = t.id and d.status <> 'done')`;
  expect(bad).toEqual([]);
}

describe('dependencies (seed 000 "Dependencies", docs/seeds/todo-list.md §6, §15)', () => {
  it('should fold duplicate dependencies, read blocked and cascade exactly when the last one is done', async () => {
    const s = await t.session();
    const a = await add(s.client, 'a');
    const b = await add(s.client, 'b');
    const d = await add(s.client, 'dependent', { dependsOn: [b.id, a.id, a.id] });
    expect(d).toMatchObject({ status: 'blocked', ready: false, dependsOn: [a.id, b.id].sort(), blockedBy: [a.id, b.id].sort() });
    expect(d.owner).toBeUndefined();
    const claim = await s.client.post(`/v1/todos/${d.id}/claim`);
    expect(claim.status).toBe(409);
    expect(claim.body.code).toBe('dependency_blocked');
    expect(claim.body.blockedBy).toEqual([a.id, b.id].sort());
    expect(claim.body.detail).toContain(a.id);
    for (const x of [a, b]) await s.client.post(`/v1/todos/${x.id}/claim`);
    await s.client.post(`/v1/todos/${a.id}/done`);
    const mid = (await s.client.get(`/v1/todos/${d.id}`)).body.item;
    expect(mid).toMatchObject({ status: 'blocked', blockedBy: [b.id], revision: 1 });
    await s.client.post(`/v1/todos/${b.id}/done`);
    const after = (await s.client.get(`/v1/todos/${d.id}`)).body.item;
    expect(after).toMatchObject({ status: 'todo', ready: true, blockedBy: [], revision: 2 });
    const ev = (await events(s.client, after.scope)).filter((e: any) => e.event === 'unblocked');
    expect(ev.map((e: any) => [e.data.id, e.data.status, e.data.revision])).toEqual([[d.id, 'todo', 2]]);
    expect((await s.client.post(`/v1/todos/${d.id}/claim`)).status).toBe(200);
    await expectCountersConsistent();
  });

  it('should refuse a cycle and keep the edges, and roll back a title change with a refused edge', async () => {
    const s = await t.session();
    const other = await t.session();
    const a = await add(s.client, 'a');
    const b = await add(s.client, 'b');
    expect((await s.client.put(`/v1/todos/${a.id}/dependencies`, { dependsOn: [b.id] })).status).toBe(200);
    const cyc = await s.client.put(`/v1/todos/${b.id}/dependencies`, { dependsOn: [a.id] });
    expect(cyc.status).toBe(422);
    expect(cyc.body.code).toBe('dependency_cycle');
    expect(cyc.body.detail).toBe(`todo dependency cycle: "${a.id}" already depends on "${b.id}" (${b.id} → ${a.id} → ${b.id})`);
    expect((await s.client.get(`/v1/todos/${b.id}`)).body.item.dependsOn).toEqual([]);
    const foreign = await add(other.client, 'elsewhere');
    const r = await t.admin.patch(`/v1/todos/${b.id}`, { title: 'renamed', dependsOn: [foreign.id] });
    expect(r.body.code).toBe('dependency_scope_mismatch');
    expect((await s.client.get(`/v1/todos/${b.id}`)).body.item.title).toBe('b');
    // A session that cannot read the other scope learns nothing: the item does not exist for it.
    const hidden = await s.client.patch(`/v1/todos/${b.id}`, { title: 'renamed', dependsOn: [foreign.id] });
    expect(hidden.body.code).toBe('dependency_not_found');
    const hiddenParent = await s.client.post('/v1/todos', { title: 'child', parentId: foreign.id });
    expect(hiddenParent.body.code).toBe('parent_not_found');
    expect((await s.client.put(`/v1/todos/${b.id}/dependencies`, { dependsOn: [b.id] })).body.code).toBe('dependency_self');
    expect((await s.client.put(`/v1/todos/${b.id}/dependencies`, { dependsOn: ['td-missing'] })).body.code).toBe('dependency_not_found');
    expect((await s.client.put(`/v1/todos/${b.id}/dependencies`, { dependsOn: [' '] })).body.code).toBe('dependency_empty');
  });

  it('should check self, unknown, scope and cycle per dependency in sorted order', async () => {
    const s = await t.session();
    const a = await add(s.client, 'a');
    const b = await add(s.client, 'b', { dependsOn: [a.id] });
    // `td-0…` sorts before every generated id, so the unknown one is reported before the cycle.
    const r = await s.client.put(`/v1/todos/${a.id}/dependencies`, { dependsOn: [b.id, 'td-0000000000000000'] });
    expect(r.body.code).toBe('dependency_not_found');
  });

  it('should re-block only unclaimed dependents when a done dependency reopens, never unwinding claimed work', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    await s.client.post(`/v1/todos/${dep.id}/claim`);
    await s.client.post(`/v1/todos/${dep.id}/done`);
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    expect(x.status).toBe('todo');
    const reopened = await s.client.post(`/v1/todos/${dep.id}/reopen`);
    expect(reopened.body.item.status).toBe('todo');
    const blocked = (await s.client.get(`/v1/todos/${x.id}`)).body.item;
    expect(blocked).toMatchObject({ status: 'blocked', blockedBy: [dep.id], revision: 2 });
    const ev = (await events(s.client, x.scope)).filter((e: any) => e.data.id === x.id).map((e: any) => e.event);
    expect(ev).toEqual(['added', 'dependency-blocked']);
    await s.client.post(`/v1/todos/${dep.id}/claim`);
    await s.client.post(`/v1/todos/${dep.id}/done`);
    await s.client.post(`/v1/todos/${x.id}/claim`);
    await s.client.post(`/v1/todos/${dep.id}/reopen`);
    const stillMine = (await s.client.get(`/v1/todos/${x.id}`)).body.item;
    expect(stillMine).toMatchObject({ status: 'in-progress', owner: s.id });
    // Reclaim of the owner: the dependent comes back dependency-blocked and ownerless.
    const w = await t.session({ parentId: s.id, by: s.client });
    const y = await add(s.client, 'y');
    await w.client.post(`/v1/todos/${y.id}/claim`);
    await s.client.put(`/v1/todos/${y.id}/dependencies`, { dependsOn: [dep.id] });
    await t.admin.post(`/v1/sessions/${w.id}/stop`);
    const back = (await s.client.get(`/v1/todos/${y.id}`)).body.item;
    expect(back.status).toBe('blocked');
    expect(back.owner).toBeUndefined();
    await expectCountersConsistent();
  });

  it('should not let a manually blocked dependency satisfy its dependents', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    await s.client.post(`/v1/todos/${dep.id}/claim`);
    await s.client.post(`/v1/todos/${dep.id}/block`, { note: 'waiting' });
    expect((await s.client.get(`/v1/todos/${x.id}`)).body.item.status).toBe('blocked');
    await s.client.post(`/v1/todos/${dep.id}/done`);
    expect((await s.client.get(`/v1/todos/${x.id}`)).body.item.status).toBe('todo');
  });

  it('should refuse removing a referenced item until the edge is cleared', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    const r = await s.client.del(`/v1/todos/${dep.id}`);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'todo_referenced', dependent: x.id, dependency: dep.id });
    expect(r.body.detail).toBe(`cannot remove todo "${dep.id}": todo "${x.id}" depends on "${dep.id}"`);
    await s.client.put(`/v1/todos/${x.id}/dependencies`, { dependsOn: [] });
    expect((await s.client.del(`/v1/todos/${dep.id}`)).status).toBe(200);
  });

  it('should let a sub-item depend on its own parent and remove both with the parent', async () => {
    const s = await t.session();
    const p = await add(s.client, 'parent');
    const c = await add(s.client, 'child', { parentId: p.id, dependsOn: [p.id] });
    expect(c.status).toBe('blocked');
    expect((await s.client.del(`/v1/todos/${p.id}`)).body.removed.sort()).toEqual([p.id, c.id].sort());
  });

  it('should filter status=blocked to dependency waiting plus manual blocks, and status=todo to ready items', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    expect((await s.client.get('/v1/todos?status=blocked')).body.items.map((i: any) => i.id)).toEqual([x.id]);
    expect((await s.client.get('/v1/todos?status=todo')).body.items.map((i: any) => i.id)).toEqual([dep.id]);
  });

  it('should emit dependency-blocked when an unfinished edge is added to a ready item and unblocked when it is cleared', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x');
    await s.client.put(`/v1/todos/${x.id}/dependencies`, { dependsOn: [dep.id] });
    await s.client.put(`/v1/todos/${x.id}/dependencies`, { dependsOn: [] });
    const ev = (await events(s.client, x.scope)).filter((e: any) => e.data.id === x.id).map((e: any) => e.event);
    expect(ev).toEqual(['added', 'dependency-blocked', 'unblocked']);
  });

  it('should keep a dependency-blocked graph blocked across an app restart', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    const second = await startTestApp({ dbUrl: t.dbUrl });
    try {
      const r = await second.admin.get(`/v1/todos/${x.id}`);
      expect(r.body.item).toMatchObject({ status: 'blocked', blockedBy: [dep.id] });
    } finally {
      await second.app.close();
      await second.sql.end();
    }
  });

  it('should answer why an item is not ready with the claim predicate', async () => {
    const s = await t.session();
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    const r = (await s.client.get(`/v1/todos/${x.id}/readiness`)).body;
    expect(r).toMatchObject({ ready: false, claimable: false, status: 'blocked' });
    expect(r.reasons.map((x: any) => x.code)).toEqual(['dependencies_unfinished']);
    expect((await s.client.get(`/v1/todos/${dep.id}/readiness`)).body).toMatchObject({ ready: true, claimable: true, reasons: [] });
  });
});
