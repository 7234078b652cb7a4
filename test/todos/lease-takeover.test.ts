/**
 * Leases are enforced at once, not at the next sweep: from its deadline on an expired
 * claim is free. `claim` and `next` take it over (assignee and dependency rules kept), reads and
 * `status=todo` show it ready, and the take-over writes `todo` (reason lease-expired) then
 * `claimed` in one transaction; the sweep only reopens what nobody took. No sweeper runs here:
 * the deadline is reached by moving `progress_at` back, so nothing waits on the clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: 60_000 } });
});
afterAll(async () => t?.close());

const add = async (c: Client, title: string, extra: Record<string, unknown> = {}) => (await c.post('/v1/todos', { title, ...extra })).body.item;
const get = async (c: Client, id: string) => (await c.get(`/v1/todos/${id}`)).body.item;
/** Moves the claim's last progress past its deadline (claim_lease 60 s). */
const expire = (id: string) => t.sql`update todos set progress_at = now() - interval '61 seconds' where id = ${id}`;
const eventsOf = async (root: string, id: string) =>
  (
    await t.sql<{ event: string; payload: Record<string, unknown> }[]>`
    select event, payload from events where topic = ${`todo:session:${root}`} and subject_id = ${id} order by id`
  ).map((e) => [e.event, e.payload]);

async function team(n: number) {
  const root = await t.session();
  const kids = await Promise.all(Array.from({ length: n }, () => t.session({ parentId: root.id, by: root.client })));
  return { root, kids };
}

describe('an expired claim is free at once', () => {
  it('should let another session claim it by id before any sweep, writing todo (lease-expired) then claimed', async () => {
    const {
      root,
      kids: [a, b],
    } = await team(2);
    const item = await add(root.client, 'x');
    const claimed = (await a.client.post(`/v1/todos/${item.id}/claim`)).body.item;
    expect((await b.client.post(`/v1/todos/${item.id}/claim`)).body.code).toBe('already_claimed'); // not yet expired
    await expire(item.id);
    const r = await b.client.post(`/v1/todos/${item.id}/claim`);
    expect(r.status).toBe(200);
    expect(r.body.item).toMatchObject({ status: 'in-progress', owner: b.id, revision: claimed.revision + 2, leaseExpired: false });
    const ev = await eventsOf(root.id, item.id);
    expect(ev.slice(-2)).toEqual([
      [
        'todo',
        { event: 'todo', id: item.id, scope: `session:${root.id}`, status: 'todo', revision: claimed.revision + 1, reason: 'lease-expired', formerOwner: a.id },
      ],
      ['claimed', { event: 'claimed', id: item.id, scope: `session:${root.id}`, status: 'in-progress', owner: b.id, revision: claimed.revision + 2 }],
    ]);
    // The former owner is now a stranger to it; the sweep finds nothing to reopen.
    expect((await a.client.post(`/v1/todos/${item.id}/done`)).status).toBe(403);
    expect((await runSweep(t.sql, t.config)).leaseReopened).toBe(0);
    expect((await get(root.client, item.id)).owner).toBe(b.id);
  });

  it('should let the former owner claim it again, as its lease_expired error says', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const item = await add(root.client, 'x');
    await a.client.post(`/v1/todos/${item.id}/claim`);
    await expire(item.id);
    const refused = await a.client.post(`/v1/todos/${item.id}/done`);
    expect([refused.status, refused.body.code]).toEqual([409, 'lease_expired']);
    expect(refused.body.detail).toMatch(/claim it again/);
    expect((await a.client.post(`/v1/todos/${item.id}/claim`)).body.item).toMatchObject({ owner: a.id, leaseExpired: false });
    expect((await a.client.post(`/v1/todos/${item.id}/done`)).status).toBe(200);
  });

  it('should read as ready from its deadline: status todo, no owner, in status=todo lists and readiness', async () => {
    const {
      root,
      kids: [a],
    } = await team(1);
    const item = await add(root.client, 'x');
    await a.client.post(`/v1/todos/${item.id}/claim`);
    await expire(item.id);
    const read = await get(root.client, item.id);
    expect(read).toMatchObject({ status: 'todo', ready: true, leaseExpired: true });
    expect(read.owner).toBeUndefined();
    const list = async (q: string, c = root.client) => (await c.get(`/v1/todos?scope=session:${root.id}&${q}`)).body.items.map((i: { id: string }) => i.id);
    expect(await list('status=todo')).toContain(item.id);
    expect(await list('status=in-progress')).not.toContain(item.id);
    expect(await list(`owner=${a.id}`)).not.toContain(item.id);
    const why = (await root.client.get(`/v1/todos/${item.id}/readiness`)).body;
    expect(why).toMatchObject({ ready: true, status: 'todo' });
  });

  it("should keep the assignee rule: reserved for its assignee, skipped by everyone else's next", async () => {
    const {
      root,
      kids: [a, b],
    } = await team(2);
    const item = await add(root.client, 'for a', { assignee: a.id });
    await a.client.post(`/v1/todos/${item.id}/claim`);
    await expire(item.id);
    const r = await b.client.post(`/v1/todos/${item.id}/claim`);
    expect([r.status, r.body.code]).toEqual([403, 'reserved_for_assignee']);
    expect((await b.client.post('/v1/todos/next', { scope: `session:${root.id}` })).body).toEqual({ claimed: false });
    expect((await a.client.post('/v1/todos/next', { scope: `session:${root.id}` })).body).toMatchObject({ claimed: true, item: { id: item.id, owner: a.id } });
  });

  it('should keep the dependency rule: an expired claim whose dependency reopened reads blocked and is not taken', async () => {
    const {
      root,
      kids: [a, b],
    } = await team(2);
    const dep = await add(root.client, 'dep');
    const item = await add(root.client, 'waits');
    await root.client.put(`/v1/todos/${item.id}/dependencies`, { dependsOn: [dep.id] });
    await a.client.post(`/v1/todos/${dep.id}/claim`);
    await a.client.post(`/v1/todos/${dep.id}/done`);
    await a.client.post(`/v1/todos/${item.id}/claim`);
    await root.client.post(`/v1/todos/${dep.id}/reopen`);
    await expire(item.id);
    expect(await get(root.client, item.id)).toMatchObject({ status: 'blocked', ready: false, blockedBy: [dep.id] });
    expect((await b.client.post(`/v1/todos/${item.id}/claim`)).body.code).toBe('dependency_blocked');
    const next = (await b.client.post('/v1/todos/next', { scope: `session:${root.id}` })).body;
    expect(next.item?.id).toBe(dep.id); // the ready dependency, not the blocked expired claim
  });
});

describe('next takes expired claims over', () => {
  it('should take a free claim in (position, id) order with the ready items, alone and in a batch', async () => {
    const { root, kids } = await team(4);
    const [first, second, third] = [await add(root.client, '1'), await add(root.client, '2'), await add(root.client, '3')];
    await kids[0].client.post(`/v1/todos/${first.id}/claim`);
    await kids[0].client.post(`/v1/todos/${second.id}/claim`);
    await expire(first.id);
    await expire(second.id);
    // Alone: the lowest position is the expired `first`, ahead of the ready `third`.
    const alone = (await kids[1].client.post('/v1/todos/next', { scope: `session:${root.id}` })).body;
    expect(alone.item).toMatchObject({ id: first.id, owner: kids[1].id });
    // A batch (the group-commit function): expired `second`, then ready `third`, then nothing.
    const rows = await t.sql<{ id: string | null; owner: string | null; revision: number | null }[]>`
      select (f.o_item).id, (f.o_item).owner, (f.o_item).revision
        from coord_next_many('tm-default', ${`session:${root.id}`}, ${[kids[2].id, kids[3].id, kids[1].id]}::text[], true, 60000::float8, null::int, null::text[], null::text[], false, null::text[])
             with ordinality f(o_item, o_retry, ord)
       order by f.ord`;
    expect(rows).toEqual([
      { id: second.id, owner: kids[2].id, revision: 4 },
      { id: third.id, owner: kids[3].id, revision: 2 },
      { id: null, owner: null, revision: null },
    ]);
    expect((await eventsOf(root.id, second.id)).map(([e, p]) => [e, (p as { reason?: string }).reason ?? null])).toEqual([
      ['added', null],
      ['claimed', null],
      ['todo', 'lease-expired'],
      ['claimed', null],
    ]);
  });

  it('should never take over a claim when claim_lease is 0', async () => {
    const noLease = await startTestApp({ dbUrl: t.dbUrl, todo: { claimLeaseMs: 0 } });
    try {
      const root = await noLease.session();
      const [a, b] = await Promise.all([noLease.session({ parentId: root.id, by: root.client }), noLease.session({ parentId: root.id, by: root.client })]);
      const item = (await root.client.post('/v1/todos', { title: 'x' })).body.item;
      await a.client.post(`/v1/todos/${item.id}/claim`);
      await noLease.sql`update todos set progress_at = now() - interval '1000 days' where id = ${item.id}`;
      expect((await b.client.post(`/v1/todos/${item.id}/claim`)).body.code).toBe('already_claimed');
      expect((await b.client.post('/v1/todos/next', { scope: `session:${root.id}` })).body).toEqual({ claimed: false });
    } finally {
      await noLease.close();
    }
  });
});

describe('racing for an expired claim', () => {
  it('should give exactly one winner among claim, next and the sweep, with one todo and one claimed event', async () => {
    for (let round = 0; round < 10; round++) {
      const { root, kids } = await team(8);
      const item = await add(root.client, `r${round}`);
      await kids[0].client.post(`/v1/todos/${item.id}/claim`);
      await expire(item.id);
      const before = (await eventsOf(root.id, item.id)).length;
      const racers = kids
        .slice(1)
        .map((k, i) => (i % 2 ? k.client.post(`/v1/todos/${item.id}/claim`) : k.client.post('/v1/todos/next', { scope: `session:${root.id}` })));
      const [results, swept] = await Promise.all([Promise.all(racers), runSweep(t.sql, t.config)]);
      const winners = results.filter((r) => r.status === 200 && r.body.item?.id === item.id);
      const after = (await eventsOf(root.id, item.id)).slice(before);
      const reopened = after.filter(([e]) => e === 'todo');
      expect(reopened).toHaveLength(1); // by the take-over or by the sweep, never both
      expect(reopened[0][1]).toMatchObject({ reason: 'lease-expired', formerOwner: kids[0].id });
      expect(after.filter(([e]) => e === 'claimed')).toHaveLength(winners.length);
      expect(winners.length).toBe(1); // the sweep's reopen leaves it claimable, so someone still wins
      const now = await get(root.client, item.id);
      expect(now.owner).toBe(winners[0].body.item.owner);
      void swept; // it may also reopen other tests' leftovers: the events above are this item's own
    }
  });
});
