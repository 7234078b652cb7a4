/**
 * The SDK's work-loop helpers against a listening server: `withClaim` heartbeats while
 * the work runs and completes (with the work's value as the result) or blocks on its outcome;
 * `claims` and `work` are built on waiting `next`, so workers started before the items exist get
 * every item exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlreadyClaimed, createClient, type CoordClient } from '@coord/sdk';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: CoordClient;
beforeAll(async () => {
  // A 3 s lease: a work of 4 s only survives if the helper heartbeats.
  t = await startTestApp({ todo: { claimLeaseMs: 3000 } });
  admin = createClient({ baseUrl: t.base, token: t.admin.token });
});
afterAll(async () => t?.close());

async function team(n: number) {
  const root = await admin.sessions.create({ name: 'root' });
  const rootClient = createClient({ baseUrl: t.base, token: root.token });
  const kids = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const k = await rootClient.sessions.create({ name: `agent-${i}` });
      return { id: k.session.id, client: createClient({ baseUrl: t.base, token: k.token }) };
    }),
  );
  return { root: { id: root.session.id, client: rootClient }, kids };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('todos.withClaim', () => {
  it('should heartbeat through work longer than the lease, then complete with the value as the result', async () => {
    const {
      root,
      kids: [a, b],
    } = await team(2);
    const item = await root.client.todos.add({ title: 'long work' });
    const r = await a.client.todos.withClaim(
      {},
      async (claimed) => {
        expect(claimed.id).toBe(item.id);
        await sleep(4000);
        // Still ours: another session cannot take it over.
        await expect(b.client.todos.claim(item.id)).rejects.toBeInstanceOf(AlreadyClaimed);
        return { tests: 12 };
      },
      { heartbeatMs: 1000 },
    );
    expect(r.claimed).toBe(true);
    if (!r.claimed) return;
    expect(r.value).toEqual({ tests: 12 });
    expect(r.item).toMatchObject({ id: item.id, status: 'done', owner: a.id, result: { tests: 12 } });
  }, 20_000);

  it('should block the item with the error as its note when the work throws, and rethrow', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const item = await root.client.todos.add({ title: 'fails' });
    await expect(
      a.client.todos.withClaim(item.id, async () => {
        throw new Error('the build is red');
      }),
    ).rejects.toThrow('the build is red');
    expect(await root.client.todos.get(item.id)).toMatchObject({ status: 'blocked', note: 'the build is red' });
  });

  it('should answer {claimed:false} when next finds nothing, without calling the work', async () => {
    const {
      kids: [a],
    } = await team(1);
    let called = false;
    const r = await a.client.todos.withClaim({ waitMs: 100 }, async () => {
      called = true;
    });
    expect([r.claimed, called]).toEqual([false, false]);
  });
});

describe('a body JSON cannot hold', () => {
  it('should throw the TypeError itself, not ConnectionFailed', async () => {
    const {
      kids: [a],
    } = await team(1);
    const o: Record<string, unknown> = { title: 'x' };
    o.self = o;
    await expect(a.client.todos.add(o as never)).rejects.toThrow(TypeError);
  });
});

describe('todos.work and todos.claims', () => {
  it('should give every item to exactly one of 4 workers started before the items exist', async () => {
    const { root, kids } = await team(4);
    const stop = new AbortController();
    const seen: string[] = [];
    const workers = kids.map((k) =>
      k.client.todos.work(
        async (item) => {
          seen.push(item.id);
          return `done by ${k.id}`;
        },
        { waitMs: 2000, signal: stop.signal },
      ),
    );
    await sleep(200);
    const added = [];
    for (let i = 0; i < 20; i++) added.push((await root.client.todos.add({ title: `w${i}`, ...(i === 7 ? { tags: ['x'] } : {}) })).id);
    for (let i = 0; i < 100 && seen.length < 20; i++) await sleep(50);
    stop.abort();
    const summaries = await Promise.all(workers);
    expect(summaries.reduce((n, s) => n + s.done, 0)).toBe(20);
    expect(seen.sort()).toEqual([...added].sort());
    const done = await root.client.todos.listAll({ status: 'done' });
    expect(done.every((i) => typeof i.result === 'string' && i.result.startsWith('done by '))).toBe(true);
  }, 30_000);

  it('should block an item whose done is refused (a result too large, a circular one) and go on with the next', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const ids = [];
    for (const title of ['ok1', 'huge', 'circular', 'ok2']) ids.push((await root.client.todos.add({ title })).id);
    const summary = await a.client.todos.work(
      async (item) => {
        if (item.title === 'huge') return 'x'.repeat(20_000);
        if (item.title === 'circular') {
          const o: Record<string, unknown> = {};
          o.self = o;
          return o;
        }
        return item.title;
      },
      { max: 4, waitMs: 500 },
    );
    expect(summary).toEqual({ done: 2, blocked: 2 });
    const byTitle = Object.fromEntries((await root.client.todos.listAll()).map((i) => [i.title, i]));
    expect([byTitle.ok1.status, byTitle.ok2.status, byTitle.huge.status, byTitle.circular.status]).toEqual(['done', 'done', 'blocked', 'blocked']);
    expect(byTitle.huge.note).toMatch(/could not complete/);
  });

  it('should complete and claim in one request per cycle (done with next), and hand back a claim it stops on', async () => {
    const { root } = await team(0);
    const worker = await root.client.sessions.create({ name: 'counted' });
    const calls: string[] = [];
    const counted = createClient({
      baseUrl: t.base,
      token: worker.token,
      fetch: (input, init) => {
        const req = input instanceof Request ? input : new Request(input, init);
        calls.push(`${req.method} ${new URL(req.url).pathname.replace(/td-[0-9a-f]+/, '{id}')}`);
        return fetch(req);
      },
    });
    for (let i = 0; i < 5; i++) await root.client.todos.add({ title: `job ${i}` });
    const summary = await counted.todos.work(async (item) => item.title, { max: 4, waitMs: 200 });
    expect(summary).toEqual({ done: 4, blocked: 0 });
    // One waiting next to start, then each done claims the next: no next between cycles.
    expect(calls.filter((c) => c === 'POST /v1/todos/next')).toHaveLength(1);
    expect(calls.filter((c) => c === 'POST /v1/todos/{id}/done')).toHaveLength(4);
    const left = (await root.client.todos.listAll()).filter((i) => i.status !== 'done');
    expect(left.map((i) => [i.title, i.status])).toEqual([['job 4', 'todo']]);
    const both = await counted.todos.done((await counted.todos.claim(left[0].id)).id, { result: 'last', next: {} });
    expect([both.item.status, both.item.result, both.next]).toEqual(['done', 'last', { claimed: false }]);
  });

  it('should stream claims with the next filters and stop after max', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    await root.client.todos.add({ title: 'cpu', tags: ['cpu'] });
    const gpu1 = await root.client.todos.add({ title: 'gpu 1', tags: ['gpu'] });
    const gpu2 = await root.client.todos.add({ title: 'gpu 2', tags: ['gpu'], priority: 5 });
    const got: string[] = [];
    for await (const item of a.client.todos.claims({ tags: ['gpu'], max: 2, waitMs: 500 })) got.push(item.id);
    expect(got).toEqual([gpu2.id, gpu1.id]);
  });
});
