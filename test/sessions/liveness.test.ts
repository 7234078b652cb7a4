/**
 * Session liveness: lastSeenAt moves with authenticated calls (batched, about a
 * second late), the explicit heartbeat, what a session holds, and the auto-stop of a session
 * silent for longer than its heartbeat interval — real Postgres, the real clock, real pg-boss.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { addItem, startTestApp, type Client, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `fn` until it returns a truthy value (or `ms` passes, then returns the last value). */
async function until<T>(fn: () => Promise<T>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > end) return v;
    await sleep(100);
  }
}
const create = (by: Client, body: Record<string, unknown>) => by.post('/v1/sessions', body);
const sessionOf = async (c: Client, id: string) => (await c.get(`/v1/sessions/${id}`)).body.session;

describe('lastSeenAt', () => {
  it('should be set at creation and move after an authenticated call of the session (within the flush delay)', async () => {
    const s = await t.session();
    const created = await sessionOf(t.admin, s.id);
    expect(created).toMatchObject({ status: 'active', alive: true, lastSeenAt: expect.any(String) });
    expect(created.heartbeatIntervalMs).toBeUndefined();
    expect((await s.client.get('/v1/todos')).status).toBe(200);
    const moved = await until(async () => {
      const v = await sessionOf(t.admin, s.id);
      return Date.parse(v.lastSeenAt) > Date.parse(created.lastSeenAt) ? v : undefined;
    });
    expect(moved).toBeDefined();
  });

  it('should move at once on POST /v1/sessions/me/heartbeat, and refuse an operator', async () => {
    const s = await t.session();
    const before = (await sessionOf(t.admin, s.id)).lastSeenAt;
    const hb = await s.client.post('/v1/sessions/me/heartbeat');
    expect(hb.status).toBe(200);
    expect(hb.body).toEqual({ sessionId: s.id, lastSeenAt: expect.any(String) });
    expect(Date.parse(hb.body.lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(before));
    expect(Date.parse((await sessionOf(t.admin, s.id)).lastSeenAt)).toBeGreaterThanOrEqual(Date.parse(hb.body.lastSeenAt));
    const op = await t.admin.post('/v1/sessions/me/heartbeat');
    expect([op.status, op.body.code]).toEqual([403, 'forbidden']);
  });

  it('should answer a heartbeat with the auto-stop deadline when the session has an interval', async () => {
    const r = await create(t.admin, { heartbeatIntervalMs: 30_000 });
    expect(r.status).toBe(201);
    expect(r.body.session).toMatchObject({ heartbeatIntervalMs: 30_000, alive: true });
    const hb = await t.admin.as(r.body.token).post('/v1/sessions/me/heartbeat');
    expect(hb.body.heartbeatIntervalMs).toBe(30_000);
    expect(Date.parse(hb.body.autoStopAfter) - Date.parse(hb.body.lastSeenAt)).toBe(30_000);
  });

  it('should refuse heartbeat intervals outside 5 s – 24 h', async () => {
    for (const v of [0, 4999, 86_400_001, 1.5, 'x']) {
      const r = await create(t.admin, { heartbeatIntervalMs: v });
      expect([v, r.status, r.body.code]).toEqual([v, 400, 'validation_failed']);
    }
    expect((await create(t.admin, { heartbeatIntervalMs: null })).status).toBe(201);
    expect((await create(t.admin, { heartbeatIntervalMs: 5000 })).status).toBe(201);
  });
});

describe('holding', () => {
  it('should show the exact count and the five longest-held items with their claim time', async () => {
    const s = await t.session();
    const items = [];
    for (let i = 0; i < 7; i++) items.push(await addItem(s.client, `h${i}`));
    for (const i of items) expect((await s.client.post(`/v1/todos/${i.id}/claim`)).status).toBe(200);
    const v = await sessionOf(t.admin, s.id);
    expect(v.holding.count).toBe(7);
    expect(v.holding.items.map((h: any) => h.id)).toEqual(items.slice(0, 5).map((i) => i.id));
    expect(v.holding.items[0]).toMatchObject({ scope: `session:${s.id}`, title: 'h0', since: expect.any(String) });
    const sinces = v.holding.items.map((h: any) => Date.parse(h.since));
    expect([...sinces].sort((a, b) => a - b)).toEqual(sinces);
    expect(sinces[0]).toBeGreaterThanOrEqual(Date.parse(v.createdAt));
    // A heartbeat on the item extends the lease, not the claim's start.
    await s.client.post(`/v1/todos/${items[0].id}/heartbeat`);
    expect((await sessionOf(t.admin, s.id)).holding.items[0].since).toBe(v.holding.items[0].since);
    await s.client.post(`/v1/todos/${items[0].id}/done`);
    const after = (await t.admin.get('/v1/sessions?status=active&limit=1000')).body.sessions.find((x: any) => x.id === s.id);
    expect(after.holding.count).toBe(6);
    expect(after.holding.items[0].id).toBe(items[1].id);
    const empty = await t.session();
    expect((await sessionOf(t.admin, empty.id)).holding).toEqual({ count: 0, items: [] });
  });

  it('should not count a claim whose lease expired: the item reads todo without an owner before any sweep', async () => {
    const short = await startTestApp({ todo: { claimLeaseMs: 300 } });
    try {
      const s = await short.session();
      const a = await addItem(s.client, 'expires');
      const b = await addItem(s.client, 'kept alive');
      for (const i of [a, b]) expect((await s.client.post(`/v1/todos/${i.id}/claim`)).status).toBe(200);
      expect((await sessionOf(short.admin, s.id)).holding.count).toBe(2);
      for (let k = 0; k < 4; k++) {
        await new Promise((r) => setTimeout(r, 100));
        expect((await s.client.post(`/v1/todos/${b.id}/heartbeat`)).status).toBe(200);
      }
      const item = (await s.client.get(`/v1/todos/${a.id}`)).body.item;
      expect(item).toMatchObject({ status: 'todo', leaseExpired: true });
      expect(item.owner ?? null).toBeNull();
      const v = await sessionOf(short.admin, s.id);
      expect(v.holding).toMatchObject({ count: 1, items: [{ id: b.id }] });
      const listed = (await short.admin.get('/v1/sessions?limit=1000')).body.sessions.find((x: any) => x.id === s.id);
      expect(listed.holding.count).toBe(1);
    } finally {
      await short.close();
    }
  });
});

describe('auto-stop of a silent session', () => {
  it('should read not alive once silent past its interval, filter on alive, and be stopped by the sweep with its claims reopened', async () => {
    const silent = await create(t.admin, { name: 'silent', heartbeatIntervalMs: 5000 });
    const sc = t.admin.as(silent.body.token);
    const id = silent.body.session.id;
    const item = await addItem(sc, 'held by a silent session');
    expect((await sc.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const forever = await t.session(); // no interval: never auto-stopped however silent
    const dead = await until(async () => ((await sessionOf(t.admin, id)).alive === false ? true : undefined));
    expect(dead).toBe(true);
    expect((await sessionOf(t.admin, id)).status).toBe('active');
    const notAlive = (await t.admin.get('/v1/sessions?alive=false&limit=1000')).body.sessions.map((x: any) => x.id);
    const alive = (await t.admin.get('/v1/sessions?alive=true&limit=1000')).body.sessions.map((x: any) => x.id);
    expect(notAlive).toContain(id);
    expect(alive).not.toContain(id);
    expect(alive).toContain(forever.id);
    const r = await runSweep(t.sql, t.config);
    expect(r.sessionsStopped).toBeGreaterThanOrEqual(1);
    expect(await sessionOf(t.admin, id)).toMatchObject({ status: 'stopped', stopReason: 'silent', alive: false });
    expect((await sessionOf(t.admin, forever.id)).status).toBe('active');
    expect((await t.admin.get(`/v1/todos/${item.id}`)).body.item).toMatchObject({ status: 'todo' });
    expect((await sc.get('/v1/me')).status).toBe(401);
    const ev = (await t.admin.get(`/v1/events/log?topic=todo:session:${id}&after=0&limit=1000`)).body.events;
    expect(ev.filter((e: any) => e.data.id === item.id && e.data.reason === 'session-silent').map((e: any) => [e.event, e.data.formerOwner])).toEqual([
      ['todo', id],
    ]);
  });
});

describe('auto-stop through the pg-boss sweep', () => {
  let s: TestApp;
  beforeAll(async () => {
    s = await startTestApp({ sweeps: true, todo: { sweepIntervalMs: 500 } });
  });
  afterAll(async () => s?.close());

  it('should stop the silent session and keep the one that keeps calling', async () => {
    const mk = async (name: string) => {
      const r = await create(s.admin, { name, heartbeatIntervalMs: 5000 });
      return { id: r.body.session.id as string, c: s.admin.as(r.body.token) };
    };
    const [silent, busy, beating] = [await mk('silent'), await mk('busy'), await mk('beating')];
    const item = await addItem(silent.c, 'x');
    await silent.c.post(`/v1/todos/${item.id}/claim`);
    let done = false;
    // `busy` makes ordinary calls, `beating` only heartbeats; both about every second.
    const keepAlive = (async () => {
      while (!done) {
        expect((await busy.c.get('/v1/todos')).status).toBe(200);
        expect((await beating.c.post('/v1/sessions/me/heartbeat')).status).toBe(200);
        await sleep(1000);
      }
    })();
    const stopped = await until(async () => ((await sessionOf(s.admin, silent.id)).status === 'stopped' ? true : undefined), 30_000);
    // Keep going past more than one further interval: the callers must survive it.
    await sleep(6000);
    done = true;
    await keepAlive;
    expect(stopped).toBe(true);
    expect((await sessionOf(s.admin, silent.id)).stopReason).toBe('silent');
    expect((await silent.c.get('/v1/me')).status).toBe(401);
    expect((await s.admin.get(`/v1/todos/${item.id}`)).body.item.status).toBe('todo');
    for (const x of [busy, beating]) expect(await sessionOf(s.admin, x.id)).toMatchObject({ status: 'active', alive: true });
    const run = (await s.admin.get('/readyz')).body.sweeps.find((x: any) => x.sweep === 'session-liveness');
    expect(run.lastSuccessAt).not.toBeNull();
  });
});
