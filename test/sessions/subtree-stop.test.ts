/**
 * Stopping a subtree: stopping or deleting a session stops its active descendants in
 * the same transaction — every claim reopened once with its event, every token refused on every
 * replica — and concurrent stops of overlapping subtrees neither deadlock nor reopen twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem, startReplica, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let b: TestApp; // a second replica on the same database
beforeAll(async () => {
  t = await startTestApp();
  b = await startReplica(t);
});
afterAll(async () => {
  await b?.close();
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** root → child → grandchild, each holding `n` claims in the root's list. */
async function tree(n = 2) {
  const root = await t.session({ name: 'root' });
  const child = await t.session({ name: 'child', parentId: root.id, by: root.client });
  const grandchild = await t.session({ name: 'grandchild', parentId: child.id, by: child.client });
  const claims = new Map<string, string[]>();
  for (const s of [root, child, grandchild]) {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const item = await addItem(root.client, `${s.id}-${i}`);
      const c = await s.client.post(`/v1/todos/${item.id}/claim`);
      if (c.status !== 200) throw new Error(`claim: ${c.status}`);
      ids.push(item.id);
    }
    claims.set(s.id, ids);
  }
  return { root, child, grandchild, claims, all: [...claims.values()].flat() };
}

const reopenEvents = async (rootId: string) =>
  (await t.admin.get(`/v1/events/log?topic=todo:session:${rootId}&after=0&limit=1000`)).body.events.filter((e: any) => e.data.reason === 'session-stopped');

describe('subtree stop', () => {
  it('should stop root, child and grandchild in one stop, reopen every claim once with its event, and refuse every token on both replicas', async () => {
    const { root, child, grandchild, claims, all } = await tree();
    const onB = [root, child, grandchild].map((s) => b.admin.as(s.token));
    for (const c of onB) expect((await c.get('/v1/me')).status).toBe(200); // cached on B
    const stop = await t.admin.post(`/v1/sessions/${root.id}/stop`);
    expect(stop.status).toBe(200);
    expect(stop.body.session).toMatchObject({ id: root.id, status: 'stopped', stopReason: 'requested' });
    expect(stop.body.stoppedDescendants).toEqual([child.id, grandchild.id].sort());
    expect([...stop.body.reopened].sort()).toEqual([...all].sort());
    for (const s of [child, grandchild]) {
      expect((await t.admin.get(`/v1/sessions/${s.id}`)).body.session).toMatchObject({
        status: 'stopped',
        stopReason: 'ancestor',
        alive: false,
        holding: { count: 0 },
      });
    }
    for (const id of all) expect((await t.admin.get(`/v1/todos/${id}`)).body.item).toMatchObject({ status: 'todo' });
    const events = await reopenEvents(root.id);
    expect(events.map((e: any) => e.data.id).sort()).toEqual([...all].sort());
    for (const [owner, ids] of claims) for (const id of ids) expect(events.find((e: any) => e.data.id === id).data.formerOwner).toBe(owner);
    for (const s of [root, child, grandchild]) expect((await s.client.get('/v1/me')).status).toBe(401);
    for (const c of onB) {
      let status = 200;
      for (let i = 0; i < 100 && status === 200; i++) {
        status = (await c.get('/v1/me')).status;
        if (status === 200) await sleep(20);
      }
      expect(status).toBe(401);
    }
    // Idempotent: a second stop stops nothing more and reopens nothing.
    const again = await t.admin.post(`/v1/sessions/${root.id}/stop`);
    expect(again.body).toMatchObject({ reopened: [], stoppedDescendants: [] });
  });

  it('should let a session stop its own subtree, and a child stop only below itself', async () => {
    const { root, child, grandchild } = await tree(1);
    const r = await child.client.post(`/v1/sessions/${child.id}/stop`);
    expect(r.status).toBe(200);
    expect(r.body.stoppedDescendants).toEqual([grandchild.id]);
    expect((await t.admin.get(`/v1/sessions/${root.id}`)).body.session.status).toBe('active');
    expect((await root.client.get('/v1/me')).status).toBe(200);
  });

  it('should stop (not delete) the descendants of a deleted session', async () => {
    const { root, child, grandchild } = await tree(1);
    const del = await t.admin.del(`/v1/sessions/${root.id}`);
    expect(del.status).toBe(200);
    expect(del.body.session.status).toBe('deleted');
    expect(del.body.stoppedDescendants).toEqual([child.id, grandchild.id].sort());
    for (const s of [child, grandchild])
      expect((await t.admin.get(`/v1/sessions/${s.id}`)).body.session).toMatchObject({ status: 'stopped', stopReason: 'ancestor' });
  });

  it('should race stops of a parent and its child without a deadlock, reopening each claim exactly once', async () => {
    const trees = await Promise.all(Array.from({ length: 6 }, () => tree(3)));
    const results = await Promise.all(
      trees.flatMap(({ root, child }, i) => {
        // Alternate who asks first, and who asks: an operator, or the sessions themselves.
        const stopRoot = () => (i % 2 ? t.admin : root.client).post(`/v1/sessions/${root.id}/stop`);
        const stopChild = () => (i % 2 ? t.admin : child.client).post(`/v1/sessions/${child.id}/stop`);
        return i % 3 === 0 ? [stopChild(), stopRoot()] : [stopRoot(), stopChild()];
      }),
    );
    for (const r of results) expect([r.status, r.body.code]).toEqual([200, undefined]);
    for (let i = 0; i < trees.length; i++) {
      const { root, child, grandchild, all } = trees[i];
      const [a, c] = [results[2 * i], results[2 * i + 1]];
      const reopened = [...a.body.reopened, ...c.body.reopened];
      expect(reopened.sort()).toEqual([...all].sort()); // each exactly once across both stops
      const stopped = [...a.body.stoppedDescendants, ...c.body.stoppedDescendants];
      expect(new Set(stopped).size).toBe(stopped.length);
      expect(stopped).toContain(grandchild.id);
      const events = await reopenEvents(root.id);
      expect(events.map((e: any) => e.data.id).sort()).toEqual([...all].sort());
      for (const s of [root, child, grandchild]) expect((await t.admin.get(`/v1/sessions/${s.id}`)).body.session.status).toBe('stopped');
    }
  });

  it('should never leave an active child under a stopped parent when registration races the stop', async () => {
    for (let round = 0; round < 5; round++) {
      const parent = await t.session();
      const [created, stop] = await Promise.all([
        Promise.all(Array.from({ length: 4 }, () => parent.client.post('/v1/sessions', { name: 'late' }))),
        t.admin.post(`/v1/sessions/${parent.id}/stop`),
      ]);
      expect(stop.status).toBe(200);
      for (const c of created) {
        if (c.status === 201) {
          const s = (await t.admin.get(`/v1/sessions/${c.body.session.id}`)).body.session;
          expect(s.status).toBe('stopped');
        } else {
          // Refused: the parent stopped first (409), or its token was refused (401) before the create ran.
          expect([401, 409]).toContain(c.status);
        }
      }
    }
  });
});
