/** Graph subtasks are todo rows, but their structure belongs to the Task Graph v1 routes. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { example, registerAgents } from '../graphs/graphs.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('todo routes on graph scopes', () => {
  it('should read graph subtasks but refuse to add, edit, re-edge, assign or remove them', async () => {
    await registerAgents(t.admin);
    const created = await t.admin.post('/v1/graphs', example('task-graph'));
    expect(created.status).toBe(201);
    const scope = 'graph:task-product-slice';
    const list = await t.admin.get(`/v1/todos?scope=${scope}`);
    expect(list.body.items.length).toBeGreaterThan(1);
    const [first, second] = list.body.items;
    const before = (await t.sql`select count(*)::int as n from graph_subtasks`)[0].n;
    const attempts = [
      await t.admin.post('/v1/todos', { title: 'sneaky', scope }),
      await t.admin.patch(`/v1/todos/${first.id}`, { title: 'renamed' }),
      await t.admin.put(`/v1/todos/${first.id}/dependencies`, { dependsOn: [second.id] }),
      await t.admin.put(`/v1/todos/${first.id}/assignee`, { assignee: null }),
      await t.admin.del(`/v1/todos/${second.id}`),
    ];
    expect(attempts.map((r) => [r.status, r.body.code])).toEqual(Array(5).fill([409, 'managed_by_graph']));
    expect((await t.sql`select count(*)::int as n from graph_subtasks`)[0].n).toBe(before);
    expect((await t.admin.get(`/v1/todos/${first.id}`)).body.item.title).toBe(first.title);
  });

  it('should refuse text with a NUL character as a bad request, not a server error', async () => {
    const s = await t.session();
    const r = await s.client.post('/v1/todos', { title: 'a\u0000b' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_failed');
    expect((await s.client.get('/v1/todos/td-%00')).status).toBe(400);
  });
});
