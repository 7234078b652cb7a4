/**
 * The outbox and its streams (docs/architecture.md §D4): gap-free, duplicate-free resume under
 * concurrent writers, every replica serving every topic, LISTEN reconnects, authorisation,
 * heartbeats and clean-up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';
import { openSse, type SseEvent } from '../helpers/sse.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { sseHeartbeatMs: 200, dbPoolMax: 30 }, eventPollMs: 200 });
});
afterAll(async () => t?.close());

const add = async (c: Client, title: string) => (await c.post('/v1/todos', { title })).body.item;

/** The topic's events as stored, in delivery order. */
async function tableOrder(topic: string): Promise<number[]> {
  const rows = await t.sql<{ id: number }[]>`select id from events where topic = ${topic} order by tx, id`;
  return rows.map((r) => Number(r.id));
}

describe('SSE resume', () => {
  it('should deliver every event exactly once, in order, across 20+ resumes while 8 writers make 2,000 changes', async () => {
    const root = await t.session();
    const writers = await Promise.all(Array.from({ length: 8 }, () => t.session({ parentId: root.id, by: root.client })));
    const topic = `todo:session:${root.id}`;
    const url = `${t.base}/v1/events?topic=${encodeURIComponent(topic)}&after=0`;
    const received: SseEvent[] = [];
    let stopWriting = false;
    let resumes = 0;
    // 8 writers × 250 adds = 2,000 changes, concurrently.
    const writing = Promise.all(
      writers.map(async (w, i) => {
        for (let k = 0; k < 250 && !stopWriting; k++) await add(w.client, `w${i}-${k}`);
      }),
    );
    const reading = (async () => {
      let last: string | undefined;
      for (;;) {
        const s = await openSse(last ? `${t.base}/v1/events?topic=${encodeURIComponent(topic)}` : url, root.token, last ? { 'last-event-id': last } : {});
        expect(s.status).toBe(200);
        const target = received.length + 60 + Math.floor(Math.random() * 40);
        try {
          await s.until((ev) => received.length + ev.length >= Math.min(target, 2000), 15_000);
        } catch {
          /* fall through: take what arrived */
        }
        s.close();
        await s.closed;
        received.push(...s.events.filter((e) => e.id));
        if (received.length) last = received[received.length - 1].id;
        resumes++;
        if (received.length >= 2000) break;
      }
    })();
    await writing;
    await reading;
    stopWriting = true;
    expect(resumes).toBeGreaterThanOrEqual(20);
    const ids = received.map((e) => Number(e.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(await tableOrder(topic));
    expect(received.every((e) => e.event === 'added' && e.data.scope === `session:${root.id}`)).toBe(true);
  });

  it('should send a resync event for a cursor that is not retained, then continue from the head', async () => {
    const s = await t.session();
    const topic = `todo:session:${s.id}`;
    const stream = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(topic)}`, s.token, { 'last-event-id': '999999999' });
    await stream.until((ev) => ev.some((e) => e.event === 'resync'));
    await add(s.client, 'after resync');
    await stream.until((ev) => ev.some((e) => e.event === 'added'));
    stream.close();
    const log = await s.client.get(`/v1/events/log?topic=${encodeURIComponent(topic)}&after=999999999`);
    expect(log.body).toMatchObject({ resync: true, events: [] });
    expect(log.body.nextAfter).toBeGreaterThan(0);
  });

  it('should resolve a topic named by a member of the subtree to its root scope', async () => {
    const root = await t.session();
    const child = await t.session({ parentId: root.id, by: root.client });
    await add(root.client, 'seen through the child');
    const log = await child.client.get(`/v1/events/log?topic=${encodeURIComponent(`todo:session:${child.id}`)}&after=0`);
    expect(log.status).toBe(200);
    expect(log.body.events.map((e: any) => e.topic)).toEqual([`todo:session:${root.id}`]);
  });

  it('should page the same events as JSON with nextAfter', async () => {
    const s = await t.session();
    for (let i = 0; i < 5; i++) await add(s.client, `p${i}`);
    const topic = encodeURIComponent(`todo:session:${s.id}`);
    const first = await s.client.get(`/v1/events/log?topic=${topic}&after=0&limit=3`);
    const second = await s.client.get(`/v1/events/log?topic=${topic}&after=${first.body.nextAfter}&limit=3`);
    const all = [...first.body.events, ...second.body.events];
    expect(all.map((e: any) => e.data.title ?? e.event)).toHaveLength(5);
    expect(all.map((e: any) => e.seq)).toEqual(await tableOrder(`todo:session:${s.id}`));
  });
});

describe('replicas and the LISTEN connection', () => {
  it('should deliver a change written through replica B to a subscriber on A within one second, and survive a killed LISTEN connection', async () => {
    const b = await startTestApp({ dbUrl: t.dbUrl, eventPollMs: 5000 });
    try {
      const s = await t.session();
      const topic = `todo:session:${s.id}`;
      const stream = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(topic)}`, s.token);
      const viaB = b.admin.as(s.token);
      const t0 = Date.now();
      await add(viaB, 'through B');
      await stream.until((ev) => ev.some((e) => e.data?.event === 'added'), 1000);
      expect(Date.now() - t0).toBeLessThan(1000);
      // Kill A's LISTEN connection from the database side, then keep writing through B.
      const before = t.app.coord.hub.listenCount;
      const killed = await t.sql`select pg_terminate_backend(pid) from pg_stat_activity
                                  where datname = current_database() and query ilike 'listen%' and pid <> pg_backend_pid()`;
      expect(killed.length).toBeGreaterThan(0);
      for (let i = 0; i < 10; i++) await add(viaB, `after kill ${i}`);
      await stream.until((ev) => ev.filter((e) => e.event === 'added').length === 11, 5000);
      stream.close();
      const ids = stream.events.filter((e) => e.id).map((e) => Number(e.id));
      expect(ids).toEqual(await tableOrder(topic));
      expect(t.app.coord.hub.listenCount).toBeGreaterThanOrEqual(before);
    } finally {
      await b.app.close();
      await b.sql.end();
    }
  });
});

describe('authorisation, heartbeats and resources', () => {
  it('should not let a session outside the scope subscribe, and answer exactly as for a topic that does not exist', async () => {
    const a = await t.session();
    const outsider = await t.session();
    const theirs = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(`todo:session:${a.id}`)}`, outsider.token);
    const nobody = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent('todo:session:s-nobody')}`, outsider.token);
    expect([theirs.status, nobody.status]).toEqual([404, 404]);
    const log = await outsider.client.get(`/v1/events/log?topic=${encodeURIComponent(`todo:session:${a.id}`)}`);
    expect(log.status).toBe(404);
  });

  it('should send heartbeats on an idle stream, with headers that stop buffering, and free the stream when the client closes', async () => {
    const s = await t.session();
    const before = t.app.coord.openStreams();
    const stream = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(`todo:session:${s.id}`)}`, s.token);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    expect(stream.headers.get('cache-control')).toContain('no-transform');
    await stream.until(() => stream.comments.filter((c) => c === 'heartbeat').length >= 2, 3000);
    expect(t.app.coord.openStreams()).toBe(before + 1);
    stream.close();
    for (let i = 0; i < 50 && t.app.coord.openStreams() !== before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(t.app.coord.openStreams()).toBe(before);
  });

  it('should end the open streams of a stopped session at once, on every replica', async () => {
    const other = await startTestApp({ dbUrl: t.dbUrl, config: { sseHeartbeatMs: 60_000 } });
    const root = await t.session();
    const child = await t.session({ parentId: root.id, by: root.client });
    const url = (base: string) => `${base}/v1/events?topic=${encodeURIComponent(`todo:session:${root.id}`)}`;
    const here = await openSse(url(t.base), child.token);
    const there = await openSse(url(other.base), child.token);
    expect([here.status, there.status]).toEqual([200, 200]);
    const t0 = Date.now();
    await t.admin.post(`/v1/sessions/${child.id}/stop`);
    const stream = here;
    await Promise.race([Promise.all([here.closed, there.closed]), new Promise((_, rej) => setTimeout(() => rej(new Error('stream still open')), 3000))]);
    expect(Date.now() - t0).toBeLessThan(2000);
    await other.app.close();
    await other.sql.end();
    await add(root.client, 'after the stop');
    await new Promise((r) => setTimeout(r, 300));
    expect(stream.events.filter((e) => e.event === 'added')).toEqual([]);
  });

  it('should refuse streams beyond the cap with 503 too_many_streams', async () => {
    const capped = await startTestApp({ dbUrl: t.dbUrl, config: { maxStreams: 2 } });
    try {
      const s = await capped.session();
      const url = `${capped.base}/v1/events?topic=${encodeURIComponent(`todo:session:${s.id}`)}`;
      const open = [await openSse(url, s.token), await openSse(url, s.token)];
      const third = await openSse(url, s.token);
      expect(third.status).toBe(503);
      for (const o of open) o.close();
    } finally {
      await capped.app.close();
      await capped.sql.end();
    }
  });

  it('should let exactly the cap through when 200 streams open at once against a cap of 60', async () => {
    const capped = await startTestApp({ dbUrl: t.dbUrl, config: { maxStreams: 60, dbPoolMax: 30 } });
    try {
      const s = await capped.session();
      const url = `${capped.base}/v1/events?topic=${encodeURIComponent(`todo:session:${s.id}`)}`;
      const streams = await Promise.all(Array.from({ length: 200 }, () => openSse(url, s.token)));
      expect(streams.filter((o) => o.status === 200)).toHaveLength(60);
      expect(streams.filter((o) => o.status === 503)).toHaveLength(140);
      for (const o of streams) o.close();
    } finally {
      await capped.app.close();
      await capped.sql.end();
    }
  });

  it('should end open streams cleanly when the server shuts down', async () => {
    const other = await startTestApp({ dbUrl: t.dbUrl });
    const s = await other.session();
    const stream = await openSse(`${other.base}/v1/events?topic=${encodeURIComponent(`todo:session:${s.id}`)}`, s.token);
    await other.app.close();
    await other.sql.end();
    await stream.closed;
    expect(stream.status).toBe(200);
  });
});
