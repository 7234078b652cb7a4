/**
 * Group commit of the claim cycle (src/db/group-commit.ts, src/todos/todos.batch.ts,
 * migrations/0004_group_commit.sql): the scheduler's batching and failure isolation, and that a
 * batch means exactly what its requests mean one after another (seed 000 `next` and `done`),
 * against a real Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/db/group-commit.js';
import { groupCommitStats } from '../../src/todos/todos.batch.js';
import { addItem as add, startTestApp, type Client, type TestApp } from '../helpers/app.js';

describe('GroupCommit (the scheduler)', () => {
  const deferred = () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    return { gate, open };
  };

  const turn = () => new Promise((r) => setImmediate(r));

  it('should send the requests of one event-loop turn as one batch, at the end of that turn', async () => {
    const batches: number[][] = [];
    const gc = new GroupCommit<number, number>(
      async (_k, reqs) => {
        batches.push(reqs);
        return reqs.map((r) => r + 1);
      },
      { maxBatch: 64, maxInFlight: 1, rolledBack: () => true },
    );
    const all = [gc.submit('k', 1), gc.submit('k', 2), gc.submit('k', 3)];
    expect(batches).toEqual([]); // nothing yet: the batch goes at the end of this turn
    await turn();
    expect(batches).toEqual([[1, 2, 3]]);
    expect(await Promise.all(all)).toEqual([2, 3, 4]);
    expect(await gc.submit('k', 9)).toBe(10); // an idle lane: a lone request, one turn later
    expect(batches).toEqual([[1, 2, 3], [9]]);
  });

  it('should run a lone request alone and send the requests that queued meanwhile as one batch', async () => {
    const first = deferred();
    const batches: number[][] = [];
    const gc = new GroupCommit<number, number>(
      async (_k, reqs) => {
        batches.push(reqs);
        if (batches.length === 1) await first.gate;
        return reqs.map((r) => r * 10);
      },
      { maxBatch: 64, maxInFlight: 1, rolledBack: () => true },
    );
    const all = [gc.submit('k', 0)];
    await turn();
    all.push(...Array.from({ length: 9 }, (_, i) => gc.submit('k', i + 1)));
    await turn();
    first.open();
    expect(await Promise.all(all)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(batches).toEqual([[0], [1, 2, 3, 4, 5, 6, 7, 8, 9]]);
    expect(gc.stats).toMatchObject({ batches: 2, requests: 10 });
  });

  it('should cap a batch at maxBatch and keep lanes of different keys apart', async () => {
    const batches: string[][] = [];
    const gate = deferred();
    const gc = new GroupCommit<string, string>(
      async (key, reqs) => {
        batches.push(reqs.map((r) => `${key}:${r}`));
        await gate.gate;
        return reqs;
      },
      { maxBatch: 3, maxInFlight: 1, rolledBack: () => true },
    );
    const all = [gc.submit('x', 'a'), gc.submit('y', 'z')];
    await turn();
    all.push(...['b', 'c', 'd', 'e', 'f', 'g'].map((r) => gc.submit('x', r)));
    await turn();
    gate.open();
    await Promise.all(all);
    expect(batches).toEqual([['x:a'], ['y:z'], ['x:b', 'x:c', 'x:d'], ['x:e', 'x:f', 'x:g']]);
  });

  it('should retry each request of a rolled-back batch alone, so one bad request fails only itself', async () => {
    const gate = deferred();
    const calls: number[][] = [];
    const gc = new GroupCommit<number, number>(
      async (_k, reqs) => {
        calls.push(reqs);
        if (calls.length === 1) await gate.gate;
        if (reqs.includes(13)) throw Object.assign(new Error('refused'), { rolledBack: true });
        return reqs;
      },
      { maxBatch: 64, maxInFlight: 1, rolledBack: (e) => (e as { rolledBack?: boolean }).rolledBack === true },
    );
    const settle = (p: Promise<number>) =>
      p.then(
        (v) => ({ ok: v }),
        (e: Error) => ({ err: e.message }),
      );
    const all = [settle(gc.submit('k', 1))];
    await turn();
    all.push(...[2, 13, 4].map((r) => settle(gc.submit('k', r))));
    await turn();
    gate.open();
    expect(await Promise.all(all)).toEqual([{ ok: 1 }, { ok: 2 }, { err: 'refused' }, { ok: 4 }]);
    expect(calls).toEqual([[1], [2, 13, 4], [2], [13], [4]]);
    expect(gc.stats.retriedAlone).toBe(3);
  });

  it('should not retry a batch whose outcome is unknown: every request gets the error', async () => {
    const gate = deferred();
    let calls = 0;
    const gc = new GroupCommit<number, number>(
      async (_k, reqs) => {
        calls++;
        if (calls === 1) {
          await gate.gate;
          return reqs;
        }
        throw new Error('connection lost');
      },
      { maxBatch: 64, maxInFlight: 1, rolledBack: () => false },
    );
    const settle = (p: Promise<number>) =>
      p.then(
        (v) => v,
        (e: Error) => e.message,
      );
    const all = [settle(gc.submit('k', 1))];
    await turn();
    all.push(...[2, 3].map((r) => settle(gc.submit('k', r))));
    await turn();
    gate.open();
    expect(await Promise.all(all)).toEqual([1, 'connection lost', 'connection lost']);
    expect(calls).toBe(2);
  });

  it('should reject every request of a batch that returned the wrong number of results', async () => {
    const gc = new GroupCommit<number, number>(async () => [], { maxBatch: 64, maxInFlight: 1, rolledBack: () => true });
    await expect(gc.submit('k', 1)).rejects.toThrow(/0 results for 1 requests/);
  });
});

describe('group commit against Postgres', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { dbPoolMax: 40 } });
  });
  afterAll(async () => t?.close());

  const children = (n: number, root: { id: string; client: Client }) =>
    Promise.all(Array.from({ length: n }, (_, i) => t.session({ name: `a${i}`, parentId: root.id, by: root.client })));

  it('should batch concurrent next and done calls and still claim and complete every item exactly once', async () => {
    const root = await t.session();
    const agents = await children(24, root);
    for (let i = 0; i < 96; i++) await add(root.client, `b${i}`);
    const before = groupCommitStats(t.sql);
    const batchesBefore = (before.next?.batches ?? 0) + (before.done?.batches ?? 0);
    const requestsBefore = (before.next?.requests ?? 0) + (before.done?.requests ?? 0);
    const claimed: string[] = [];
    await Promise.all(
      agents.map(async (a) => {
        for (;;) {
          const r = await a.client.post('/v1/todos/next');
          expect(r.status).toBe(200);
          if (!r.body.claimed) return;
          expect(r.body.item).toMatchObject({ status: 'in-progress', owner: a.id, revision: 2, blockedBy: [] });
          claimed.push(r.body.item.id);
          const d = await a.client.post(`/v1/todos/${r.body.item.id}/done`);
          expect(d.status).toBe(200);
          expect(d.body.item).toMatchObject({ status: 'done', owner: a.id, revision: 3 });
        }
      }),
    );
    expect(claimed).toHaveLength(96);
    expect(new Set(claimed).size).toBe(96);
    const after = groupCommitStats(t.sql);
    const batches = (after.next?.batches ?? 0) + (after.done?.batches ?? 0) - batchesBefore;
    const requests = (after.next?.requests ?? 0) + (after.done?.requests ?? 0) - requestsBefore;
    expect(requests).toBeGreaterThanOrEqual(96 * 2 + 24);
    expect(batches).toBeLessThan(requests); // some requests shared a round trip
    const scope = `todo:session:${root.id}`;
    const [ev] = await t.sql<{ claimed: number; done: number }[]>`
      select count(*) filter (where event = 'claimed')::int as claimed, count(*) filter (where event = 'done')::int as done
        from events where topic = ${scope}`;
    expect(ev).toEqual({ claimed: 96, done: 96 });
    const metrics = await (await fetch(`${t.base}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(value('coord_group_commit_next_requests_total')).toBe(after.next!.requests);
    expect(value('coord_group_commit_done_batches_total')).toBe(after.done!.batches);
    expect(metrics).toContain('# TYPE coord_group_commit_next_batches_total counter');
    expect(metrics).toContain('# TYPE coord_sse_open_streams gauge');
  });

  it('should match a batch of next calls to items as if they ran one after another, assignees included', async () => {
    const root = await t.session();
    const [a, b, c] = await children(3, root);
    const i1 = await add(root.client, 'for b', { assignee: b.id });
    const i2 = await add(root.client, 'open 1');
    const i3 = await add(root.client, 'for c', { assignee: c.id });
    await add(root.client, 'open 2');
    const rows = await t.sql<{ id: string | null; owner: string | null; retry: boolean }[]>`
      select (f.o_item).id, (f.o_item).owner, f.o_retry as retry
        from coord_next_many('tm-default', ${`session:${root.id}`}, ${[a.id, b.id, c.id]}::text[], true, 0, null::int, null::text[], null::text[], false, null::text[]) with ordinality f(o_item, o_retry, ord)
       order by f.ord`;
    // a: the first item it may take (i1 is reserved for b); b: its own i1; c: its own i3.
    expect(rows).toEqual([
      { id: i2.id, owner: a.id, retry: false },
      { id: i1.id, owner: b.id, retry: false },
      { id: i3.id, owner: c.id, retry: false },
    ]);
    const ev = await t.sql<
      { subject_id: string }[]
    >`select subject_id from events where topic = ${`todo:session:${root.id}`} and event = 'claimed' order by id`;
    expect(ev.map((e) => e.subject_id)).toEqual([i2.id, i1.id, i3.id]);
  });

  it('should say retry when the locked window ran out for an actor, and the HTTP path then claims beyond it', async () => {
    const root = await t.session();
    const [a, b] = await children(2, root);
    await add(root.client, 'for b 1', { assignee: b.id });
    await add(root.client, 'for b 2', { assignee: b.id });
    const open = await add(root.client, 'open');
    const rows = await t.sql<{ id: string | null; retry: boolean }[]>`
      select (f.o_item).id, f.o_retry as retry
        from coord_next_many('tm-default', ${`session:${root.id}`}, ${[a.id, b.id]}::text[], true, 0, null::int, null::text[], null::text[], false, null::text[]) with ordinality f(o_item, o_retry, ord)
       order by f.ord`;
    expect(rows[0]).toEqual({ id: null, retry: true }); // both locked rows were b's; `open` lay beyond
    expect(rows[1].retry).toBe(false);
    const r = await a.client.post('/v1/todos/next');
    expect(r.body).toMatchObject({ claimed: true, item: { id: open.id, owner: a.id } });
    const none =
      await t.sql`select (f.o_item).id, f.o_retry as retry from coord_next_many('tm-default', ${`session:${root.id}`}, ${[a.id]}::text[], true, 0, null::int, null::text[], null::text[], false, null::text[]) f(o_item, o_retry)`;
    expect(none).toEqual([{ id: null, retry: false }]); // nothing eligible at all: no retry
  });

  it("should answer batched next and done calls with each item's dependency ids, sorted", async () => {
    const root = await t.session();
    const agents = await children(8, root);
    const deps = [await add(root.client, 'dep z'), await add(root.client, 'dep y')];
    for (const d of deps) {
      expect((await root.client.post(`/v1/todos/${d.id}/claim`)).status).toBe(200);
      expect((await root.client.post(`/v1/todos/${d.id}/done`)).status).toBe(200);
    }
    const sorted = deps.map((d) => d.id).sort();
    const items = [];
    for (let i = 0; i < 8; i++) items.push(await add(root.client, `with deps ${i}`, i % 2 ? { dependsOn: [deps[0].id, deps[1].id] } : {}));
    const expected = new Map(items.map((it, i) => [it.id, i % 2 ? sorted : []]));
    const before = groupCommitStats(t.sql);
    const res = await Promise.all(agents.map((a) => a.client.post('/v1/todos/next')));
    const after = groupCommitStats(t.sql);
    expect(after.next!.batches - (before.next?.batches ?? 0)).toBeLessThan(8); // some shared a batch
    for (const r of res) {
      expect(r.status).toBe(200);
      expect(r.body.item).toMatchObject({ status: 'in-progress', dependsOn: expected.get(r.body.item.id), blockedBy: [] });
    }
    const done = await Promise.all(res.map((r, i) => agents[i].client.post(`/v1/todos/${r.body.item.id}/done`)));
    for (const d of done) {
      expect(d.status).toBe(200);
      expect(d.body.item).toMatchObject({ status: 'done', dependsOn: expected.get(d.body.item.id), blockedBy: [] });
    }
  });

  it('should complete two dependencies of one item in one batch: one unblock, after both done events', async () => {
    const root = await t.session();
    const [a, b] = await children(2, root);
    const x = await add(root.client, 'x');
    const y = await add(root.client, 'y');
    const d = await add(root.client, 'd', { dependsOn: [x.id, y.id] });
    expect((await a.client.post(`/v1/todos/${x.id}/claim`)).status).toBe(200);
    expect((await b.client.post(`/v1/todos/${y.id}/claim`)).status).toBe(200);
    const rows = await t.sql<{ id: string | null; status: string | null }[]>`
      select t.id, t.status from coord_done_many(${[x.id, y.id, 'td-missing']}::text[], ${[a.id, a.id, a.id]}::text[], false, 1800000::float8, 'all', false, null::jsonb[], null::text[], null::text[], null::text[]) with ordinality t
       order by t.ordinality`;
    // y is b's: a's done of it does not match; a missing id does not match either.
    expect(rows).toEqual([
      { id: x.id, status: 'done' },
      { id: null, status: null },
      { id: null, status: null },
    ]);
    const again = await t.sql<{ id: string | null }[]>`
      select t.id from coord_done_many(${[y.id]}::text[], ${[b.id]}::text[], false, 1800000::float8, 'all', false, null::jsonb[], null::text[], null::text[], null::text[]) t`;
    expect(again).toEqual([{ id: y.id }]);
    const dep = (await root.client.get(`/v1/todos/${d.id}`)).body.item;
    expect(dep).toMatchObject({ status: 'todo', ready: true, blockedBy: [], revision: 2 });

    // Both in one batch this time: a fresh diamond.
    const x2 = await add(root.client, 'x2');
    const y2 = await add(root.client, 'y2');
    const d2 = await add(root.client, 'd2', { dependsOn: [x2.id, y2.id] });
    await a.client.post(`/v1/todos/${x2.id}/claim`);
    await b.client.post(`/v1/todos/${y2.id}/claim`);
    await t.sql`select t.id from coord_done_many(${[x2.id, y2.id]}::text[], ${[a.id, b.id]}::text[], false, 1800000::float8, 'all', false, null::jsonb[], null::text[], null::text[], null::text[]) t`;
    const ev = await t.sql<{ event: string; subject_id: string; tx: string }[]>`
      select event, subject_id, tx::text as tx from events
       where topic = ${`todo:session:${root.id}`} and subject_id = any(${[x2.id, y2.id, d2.id]}::text[]) and event in ('done', 'unblocked')
       order by tx, id`;
    expect(ev.map((e) => `${e.event} ${e.subject_id}`)).toEqual([`done ${x2.id}`, `done ${y2.id}`, `unblocked ${d2.id}`]);
    expect(new Set(ev.map((e) => e.tx)).size).toBe(1);
    const dep2 = (await root.client.get(`/v1/todos/${d2.id}`)).body.item;
    expect(dep2).toMatchObject({ status: 'todo', ready: true, revision: 2 });
  });

  it('should give one 200 and 409s to three simultaneous dones of one item (a repeated id in one batch runs alone)', async () => {
    const root = await t.session();
    const [a] = await children(1, root);
    for (let round = 0; round < 10; round++) {
      const item = await add(root.client, `twice ${round}`);
      await a.client.post(`/v1/todos/${item.id}/claim`);
      const res = await Promise.all([1, 2, 3].map(() => a.client.post(`/v1/todos/${item.id}/done`)));
      expect(res.map((r) => r.status).sort()).toEqual([200, 409, 409]);
      for (const r of res.filter((x) => x.status === 409)) expect(r.body.code).toBe('invalid_transition');
    }
  });

  it('should behave the same with group commit turned off (COORD_GROUP_COMMIT=1)', async () => {
    const off = await startTestApp({ config: { groupCommitMax: 1 } });
    try {
      const root = await off.session();
      const agents = await Promise.all(Array.from({ length: 8 }, () => off.session({ parentId: root.id, by: root.client })));
      for (let i = 0; i < 16; i++) await root.client.post('/v1/todos', { title: `o${i}` });
      const got: string[] = [];
      await Promise.all(
        agents.map(async (a) => {
          for (;;) {
            const r = await a.client.post('/v1/todos/next');
            if (!r.body.claimed) return;
            got.push(r.body.item.id);
            expect((await a.client.post(`/v1/todos/${r.body.item.id}/done`)).status).toBe(200);
          }
        }),
      );
      expect(new Set(got).size).toBe(16);
      expect(groupCommitStats(off.sql)).toEqual({ next: undefined, done: undefined });
    } finally {
      await off.close();
    }
  });
});
