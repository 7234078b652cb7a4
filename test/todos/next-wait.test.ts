/**
 * Waiting `next`: `POST /v1/todos/next` with `waitMs` holds the request until an
 * eligible item appears, woken by the scope's events (this replica's doorbell, another replica's
 * NOTIFY), never handing one item to two waiters; a waiter whose client disconnects does not
 * swallow an item; closing the replica ends the waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { groupCommitStats } from '../../src/todos/todos.batch.js';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const add = async (c: Client, title: string, extra: Record<string, unknown> = {}) => {
  const r = await c.post('/v1/todos', { title, ...extra });
  expect(r.status).toBe(201);
  return r.body.item;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function team(n: number) {
  const root = await t.session();
  const kids = await Promise.all(Array.from({ length: n }, () => t.session({ parentId: root.id, by: root.client })));
  return { root, kids };
}

describe('waiting next', () => {
  it('should answer at once when an item is ready, and hold until one is added otherwise', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const first = await add(root.client, 'ready');
    const now = await a.client.post('/v1/todos/next', { waitMs: 60_000 });
    expect(now.body).toMatchObject({ claimed: true, item: { id: first.id, owner: a.id } });
    const waiting = a.client.post('/v1/todos/next', { waitMs: 60_000 });
    await sleep(100);
    const later = await add(root.client, 'later');
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ claimed: true, item: { id: later.id, owner: a.id, status: 'in-progress' } });
  });

  it('should answer {claimed:false} when the wait runs out, and refuse a wait over 60 s', async () => {
    const {
      kids: [a],
    } = await team(1);
    const r = await a.client.post('/v1/todos/next', { waitMs: 200 });
    expect([r.status, r.body]).toEqual([200, { claimed: false }]);
    const tooLong = await a.client.post('/v1/todos/next', { waitMs: 60_001 });
    expect([tooLong.status, tooLong.body.code]).toEqual([400, 'validation_failed']);
  });

  it('should refuse an invalid scope at once rather than after the wait', async () => {
    const {
      kids: [a],
    } = await team(1);
    const r = await a.client.post('/v1/todos/next', { scope: 'session:s-0000000000000000', waitMs: 60_000 });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
  });

  it('should count a waiting session as seen, so a heartbeat interval does not stop it mid-wait', async () => {
    const root = await t.session();
    const made = await root.client.post('/v1/sessions', { name: 'waiter', heartbeatIntervalMs: 5000 });
    const waiter = root.client.as(made.body.token);
    const waiting = waiter.post('/v1/todos/next', { waitMs: 8000 });
    await sleep(6500); // longer than the interval, all of it spent waiting
    await runSweep(t.sql, t.config);
    const [s] = await t.sql<{ status: string }[]>`select status from sessions where id = ${made.body.session.id}`;
    expect(s.status).toBe('active');
    expect((await waiting).body).toEqual({ claimed: false });
  }, 20_000);

  it('should not store a {claimed:false} answer for its Idempotency-Key: a retry waits and claims again', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const key = { 'idempotency-key': `wait-${a.id}` };
    expect((await a.client.post('/v1/todos/next', { waitMs: 100 }, key)).body).toEqual({ claimed: false });
    const item = await add(root.client, 'appeared');
    const retry = await a.client.post('/v1/todos/next', { waitMs: 100 }, key);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body).toMatchObject({ claimed: true, item: { id: item.id } });
    const again = await a.client.post('/v1/todos/next', { waitMs: 100 }, key);
    expect([again.headers.get('idempotent-replayed'), again.body.item?.id]).toEqual(['true', item.id]);
  });

  it('should end a wait with 401 when the waiting session is stopped', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const waiting = a.client.post('/v1/todos/next', { waitMs: 60_000 });
    await sleep(100);
    expect((await root.client.post(`/v1/sessions/${a.id}/stop`)).status).toBe(200);
    const r = await waiting;
    expect([r.status, r.body.code]).toEqual([401, 'unauthorized']);
  });

  it('should wait for an item its filters admit, not for any item', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const waiting = a.client.post('/v1/todos/next', { waitMs: 60_000, tags: ['gpu'] });
    await sleep(100);
    const cpu = await add(root.client, 'cpu', { tags: ['cpu'] });
    const gpu = await add(root.client, 'gpu', { tags: ['gpu'] });
    const r = await waiting;
    expect(r.body.item.id).toBe(gpu.id);
    expect((await root.client.get(`/v1/todos/${cpu.id}`)).body.item.status).toBe('todo');
  });

  it(`should give each of 32 items added one by one to exactly one of 32 waiters (${scaled(50)} rounds)`, async () => {
    const { root, kids } = await team(32);
    const before = groupCommitStats(t.sql).next?.requests ?? 0;
    for (let round = 0; round < scaled(50); round++) {
      const waits = kids.map((k) => k.client.post('/v1/todos/next', { waitMs: 30_000 }));
      const added: string[] = [];
      for (let i = 0; i < 32; i++) added.push((await add(root.client, `r${round}-${i}`)).id);
      const answers = await Promise.all(waits);
      const got = answers.map((a) => {
        expect(a.status).toBe(200);
        expect(a.body.claimed).toBe(true);
        return a.body.item.id as string;
      });
      expect(new Set(got).size).toBe(32);
      expect(new Set(got)).toEqual(new Set(added));
      // and each owner is the waiter that was answered with it
      answers.forEach((a, i) => expect(a.body.item.owner).toBe(kids[i].id));
    }
    // No herd: each added item wakes one waiter, so a round costs 32 first tries, 32 claims and
    // the retries of tries that overlapped new events (measured 64–101 a round, more when items
    // come faster), not the 32 + 31 + … + 1 = 528 of waking every waiter on every event.
    const attempts = (groupCommitStats(t.sql).next?.requests ?? 0) - before;
    expect(attempts).toBeLessThanOrEqual(50 * 32 * 8);
  }, 400_000);

  it('should pass a wake on to the waiter whose filters admit the item', async () => {
    const {
      root,
      kids: [a, b, c],
    } = await team(3);
    const wa = a.client.post('/v1/todos/next', { waitMs: 30_000, tags: ['a'] });
    await sleep(80);
    const wb = b.client.post('/v1/todos/next', { waitMs: 30_000, tags: ['b'] });
    await sleep(80);
    const wc = c.client.post('/v1/todos/next', { waitMs: 30_000, assignedToMe: true });
    await sleep(80);
    const forC = await add(root.client, 'for c', { assignee: c.id, tags: ['z'] });
    const forB = await add(root.client, 'for b', { tags: ['b'] });
    const forA = await add(root.client, 'for a', { tags: ['a'] });
    const [ra, rb, rc] = await Promise.all([wa, wb, wc]);
    expect([ra.body.item.id, rb.body.item.id, rc.body.item.id]).toEqual([forA.id, forB.id, forC.id]);
  });

  it('should not let a waiter that disconnected swallow an item', async () => {
    const {
      root,
      kids: [gone, other],
    } = await team(2);
    for (let i = 0; i < 5; i++) {
      const abort = new AbortController();
      const waiting = fetch(`${t.base}/v1/todos/next`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gone.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ waitMs: 60_000 }),
        signal: abort.signal,
      }).catch(() => undefined);
      await sleep(50 + i * 20);
      abort.abort();
      await waiting;
      await sleep(20);
      const item = await add(root.client, `after-gone-${i}`);
      // Whatever the timing, the item ends up free for another session: unclaimed, or handed back.
      let free = false;
      for (let tries = 0; tries < 100 && !free; tries++) {
        const r = (await root.client.get(`/v1/todos/${item.id}`)).body.item;
        free = r.status === 'todo' && !r.owner;
        if (!free) await sleep(20);
      }
      expect(free).toBe(true);
      const r = await other.client.post('/v1/todos/next', {});
      expect(r.body).toMatchObject({ claimed: true, item: { id: item.id, owner: other.id } });
    }
  });

  it('should be woken by an item added through another replica', async () => {
    const two = await startTestApp({ dbUrl: t.dbUrl });
    try {
      const {
        root,
        kids: [a],
      } = await team(1);
      const waiting = a.client.as(a.token);
      const onTwo = new (a.client.constructor as typeof import('../helpers/app.js').Client)(two.base, a.token);
      const w = onTwo.post('/v1/todos/next', { waitMs: 30_000 });
      await sleep(150);
      const item = await add(root.client, 'from replica one');
      const r = await w;
      expect(r.body).toMatchObject({ claimed: true, item: { id: item.id, owner: a.id } });
      void waiting;
    } finally {
      await two.close();
    }
  });

  it('should end every wait with {claimed:false} when the replica closes', async () => {
    const two = await startTestApp({ dbUrl: t.dbUrl });
    const {
      kids: [a],
    } = await team(1);
    const onTwo = new (a.client.constructor as typeof import('../helpers/app.js').Client)(two.base, a.token);
    const w = onTwo.post('/v1/todos/next', { waitMs: 60_000 });
    await sleep(150);
    const closing = two.app.close();
    const r = await w;
    await closing;
    expect([r.status, r.body]).toEqual([200, { claimed: false }]);
  });
});
