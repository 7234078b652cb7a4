/**
 * `done` with `next` (`POST /v1/todos/{id}/done` with `{next}`): the claim cycle in one round
 * trip. It means exactly a `done` followed by a `next` of the same session: the completion's
 * cascade first (so a dependent it readies can be the next claim), its events before the claim's,
 * the `next` checked before anything is completed, and under a race of agents cycling this way
 * every item is claimed and completed exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, startTestApp, type TestApp } from '../helpers/app.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const events = async (c: Client, scope: string) => (await c.get(`/v1/events/log?topic=todo:${scope}&after=0&limit=1000`)).body.events as any[];

describe('done with next', () => {
  it('completes, then claims the next item, a dependent the completion readied included, events in that order', async () => {
    const s = await t.session();
    const first = (await s.client.post('/v1/todos', { title: 'first' })).body.item;
    const after = (await s.client.post('/v1/todos', { title: 'after first', dependsOn: [first.id], priority: 5 })).body.item;
    await s.client.post('/v1/todos', { title: 'plain' });
    expect((await s.client.post('/v1/todos/next', {})).body.item.id).toBe(first.id);
    const r = await s.client.post(`/v1/todos/${first.id}/done`, { result: 'ok', next: {} });
    expect(r.status).toBe(200);
    expect(r.headers.get('etag')).toBe(`"${r.body.item.revision}"`);
    expect([r.body.item.id, r.body.item.status, r.body.item.result]).toEqual([first.id, 'done', 'ok']);
    // The completion readied `after first` (priority 5): the next claim takes it, not `plain`.
    expect([r.body.next.claimed, r.body.next.item.id, r.body.next.item.status, r.body.next.item.owner]).toEqual([true, after.id, 'in-progress', s.id]);
    const log = (await events(s.client, first.scope)).map((e) => `${e.event} ${e.data.id}`);
    expect(log.slice(-3)).toEqual([`done ${first.id}`, `unblocked ${after.id}`, `claimed ${after.id}`]);
  });

  it('answers next {claimed:false} when nothing is eligible; the item is done all the same', async () => {
    const s = await t.session();
    const only = (await s.client.post('/v1/todos', { title: 'only' })).body.item;
    await s.client.post(`/v1/todos/${only.id}/claim`);
    const r = await s.client.post(`/v1/todos/${only.id}/done`, { next: { tags: ['nothing-has-this'] } });
    expect([r.status, r.body.item.status, r.body.next]).toEqual([200, 'done', { claimed: false }]);
  });

  it('checks the next before the done: a bad next completes nothing', async () => {
    const s = await t.session();
    const item = (await s.client.post('/v1/todos', { title: 'kept' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const missing = await s.client.post(`/v1/todos/${item.id}/done`, { next: { scope: 'scenario:no-such-scenario' } });
    expect([missing.status, missing.body.code]).toEqual([404, 'scope_not_found']);
    const badFilter = await s.client.post(`/v1/todos/${item.id}/done`, { next: { minPriority: 'high' } });
    expect([badFilter.status, badFilter.body.code]).toEqual([400, 'validation_failed']);
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('in-progress');
    // A user completes with override authority, but `next` needs a session: refused whole.
    const byUser = await t.admin.post(`/v1/todos/${item.id}/done`, { next: {} });
    expect([byUser.status, byUser.body.code]).toEqual([403, 'claim_requires_session']);
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('in-progress');
  });

  it('refuses the done as a plain done would, and then claims nothing', async () => {
    const s = await t.session();
    const other = await t.session({ parentId: s.id, by: s.client });
    const item = (await s.client.post('/v1/todos', { title: 'not yours' })).body.item;
    await s.client.post('/v1/todos', { title: 'spare' });
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const r = await other.client.post(`/v1/todos/${item.id}/done`, { next: {} });
    expect([r.status, r.body.code]).toEqual([403, 'forbidden']);
    expect((await s.client.get('/v1/todos?status=in-progress')).body.items.map((i: { owner: string }) => i.owner)).toEqual([s.id]);
  });

  it('waits with next.waitMs for an item that appears after the completion', async () => {
    const s = await t.session();
    const item = (await s.client.post('/v1/todos', { title: 'now' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const pending = s.client.post(`/v1/todos/${item.id}/done`, { next: { waitMs: 10_000 } });
    await new Promise((r) => setTimeout(r, 300));
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('done');
    const later = (await s.client.post('/v1/todos', { title: 'later' })).body.item;
    const r = await pending;
    expect([r.status, r.body.next.claimed, r.body.next.item?.id]).toEqual([200, true, later.id]);
  });

  it('answers 200 with the completed item when its session stops during the wait: next {claimed:false}', async () => {
    const root = await t.session();
    const s = await t.session({ parentId: root.id, by: root.client });
    const item = (await root.client.post('/v1/todos', { title: 'finished before the stop' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const pending = s.client.post(`/v1/todos/${item.id}/done`, { result: 'r', next: { waitMs: 10_000 } });
    await new Promise((r) => setTimeout(r, 300));
    expect((await root.client.post(`/v1/sessions/${s.id}/stop`)).status).toBe(200);
    const r = await pending;
    expect([r.status, r.body.item.status, r.body.item.result, r.body.next]).toEqual([200, 'done', 'r', { claimed: false }]);
    expect((await s.client.post('/v1/todos/next', {})).status).toBe(401);
  });

  it('answers a retry with the same Idempotency-Key from its first answer', async () => {
    const s = await t.session();
    const a = (await s.client.post('/v1/todos', { title: 'a' })).body.item;
    const b = (await s.client.post('/v1/todos', { title: 'b' })).body.item;
    await s.client.post(`/v1/todos/${a.id}/claim`);
    const key = { 'idempotency-key': `done-next-${a.id}` };
    const first = await s.client.post(`/v1/todos/${a.id}/done`, { next: {} }, key);
    const again = await s.client.post(`/v1/todos/${a.id}/done`, { next: {} }, key);
    expect([first.status, first.body.next.item.id]).toEqual([200, b.id]);
    expect([again.status, again.body]).toEqual([200, first.body]);
  });

  it('gives every item to exactly one of 32 agents cycling done → next, each completed once', async () => {
    const root = await t.session();
    const n = scaled(400, 96);
    const ids = (await root.client.post('/v1/todos/bulk', { items: Array.from({ length: n }, (_, i) => ({ title: `item ${i}` })) })).body.items.map(
      (i: { id: string }) => i.id,
    );
    const agents = await Promise.all(Array.from({ length: 32 }, () => t.session({ parentId: root.id, by: root.client })));
    const claimedBy = new Map<string, string[]>();
    await Promise.all(
      agents.map(async (a) => {
        let r = await a.client.post('/v1/todos/next', {});
        while (r.body.claimed) {
          const id = r.body.item.id as string;
          claimedBy.set(id, [...(claimedBy.get(id) ?? []), a.id]);
          const d = await a.client.post(`/v1/todos/${id}/done`, { next: {} });
          expect([d.status, d.body.item.status]).toEqual([200, 'done']);
          r = { ...d, body: d.body.next };
        }
      }),
    );
    expect([...claimedBy.keys()].sort()).toEqual([...ids].sort());
    expect([...claimedBy.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    const log = await events(root.client, `session:${root.id}`);
    const doneCount = new Map<string, number>();
    for (const e of log) if (e.event === 'done') doneCount.set(e.data.id, (doneCount.get(e.data.id) ?? 0) + 1);
    expect([...doneCount.values()].every((c) => c === 1) && doneCount.size === n).toBe(true);
  });
});
