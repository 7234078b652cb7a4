/**
 * The backstop of open streams (src/events/events.recheck.ts): when no doorbell rings (a lost
 * NOTIFY while a LISTEN connection reconnects; here, changes written straight to the database),
 * the replica's periodic pass still ends every stream whose token no longer authenticates or whose
 * caller may no longer read the scope, and only those, checking all streams in one pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { openSse, type SseStream } from '../helpers/sse.js';

let t: TestApp;
beforeAll(async () => {
  // The config's heartbeat interval is the re-check interval; the principal cache is off so the
  // open requests themselves do not depend on it.
  t = await startTestApp({ config: { sseHeartbeatMs: 200, principalCacheMs: 0 } });
});
afterAll(async () => t?.close());

const topicOf = (rootId: string) => `${t.base}/v1/events?topic=${encodeURIComponent(`todo:session:${rootId}`)}`;

async function closedWithin(s: SseStream, ms: number): Promise<boolean> {
  return Promise.race([s.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

describe('the open-stream re-check', () => {
  it('ends the streams of a token revoked and of a session stopped without a ring, and keeps the others open', async () => {
    const root = await t.session({ name: 'root' });
    const revoked = await t.session({ parentId: root.id, by: root.client, name: 'revoked' });
    const stopped = await t.session({ parentId: root.id, by: root.client, name: 'stopped' });
    const kept = await t.session({ parentId: root.id, by: root.client, name: 'kept' });
    const streams = {
      revoked: [await openSse(topicOf(root.id), revoked.token), await openSse(topicOf(root.id), revoked.token)],
      stopped: [await openSse(topicOf(root.id), stopped.token)],
      kept: [await openSse(topicOf(root.id), kept.token), await openSse(topicOf(root.id), root.token)],
    };
    for (const s of Object.values(streams).flat()) expect(s.status).toBe(200);

    // Straight to the database: no doorbell rings, so only the re-check can notice.
    await t.sql`update tokens set revoked_at = now() where session_id = ${revoked.id}`;
    await t.sql`update sessions set status = 'stopped', stopped_at = now(), stop_reason = 'requested' where id = ${stopped.id}`;

    for (const s of [...streams.revoked, ...streams.stopped]) expect(await closedWithin(s, 5000)).toBe(true);
    // Two more intervals: the others are still open and still deliver.
    await new Promise((r) => setTimeout(r, 500));
    for (const s of streams.kept) expect(await closedWithin(s, 0)).toBe(false);
    await root.client.post('/v1/todos', { title: 'after the re-check' });
    await new Promise((r) => setTimeout(r, 500));
    for (const s of streams.kept) expect(s.events.map((e) => e.event)).toContain('added');
    for (const s of streams.kept) s.close();
  });

  it('ends a stream whose caller lost access to a scenario scope without a ring', async () => {
    const sc = await t.admin.post('/v1/scenarios', { name: 'recheck', members: [{ name: 'a', task: 'A' }] });
    expect(sc.status).toBe(201);
    const member = t.admin.as(sc.body.tokens.a);
    const url = `${t.base}/v1/events?topic=${encodeURIComponent('todo:scenario:recheck')}`;
    const s = await openSse(url, sc.body.tokens.a);
    expect(s.status).toBe(200);
    expect((await member.get('/v1/scenarios/recheck')).status).toBe(200);
    // The member's session leaves the scenario (a change with no API and no ring).
    await t.sql`delete from scenario_members where scenario_id = ${sc.body.scenario.id}`;
    expect(await closedWithin(s, 5000)).toBe(true);
  });
});
