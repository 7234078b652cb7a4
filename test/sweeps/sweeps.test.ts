/**
 * Stranded work comes back (seed 000 "Reclaiming stranded work"; docs/seeds/todo-list.md §9,
 * docs/seeds/todo-list.md §10, §15): session stop, claim leases, retention — real Postgres and real pg-boss. Time
 * that must pass for a claim or a done item is written into its row (test/helpers/clock.ts) and
 * the sweep run right after, so the outcomes do not depend on the machine's load.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';
import { ageClaim, ageItem } from '../helpers/clock.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: 1500, retentionMs: 1000 } });
});
afterAll(async () => t?.close());

const add = async (c: Client, title: string, extra: Record<string, unknown> = {}) => (await c.post('/v1/todos', { title, ...extra })).body.item;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const get = async (c: Client, id: string) => (await c.get(`/v1/todos/${id}`)).body.item;
/** Polls `fn` until it is true (true) or 30 s pass (false): sweeps tick on their own schedule. */
async function eventually(fn: () => Promise<boolean>, ms = 30_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (await fn()) return true;
  return false;
}

describe('session stop and soft-delete', () => {
  it('should reopen claimed items, bring dependency-blocked ones back blocked, and leave manual blocks alone', async () => {
    const root = await t.session();
    const w = await t.session({ parentId: root.id, by: root.client });
    const plain = await add(root.client, 'plain');
    const reserved = await add(root.client, 'reserved', { assignee: w.id });
    const dep = await add(root.client, 'dep');
    const waiting = await add(root.client, 'waiting');
    const manual = await add(root.client, 'manual');
    for (const i of [plain, reserved, waiting, manual]) expect((await w.client.post(`/v1/todos/${i.id}/claim`)).status).toBe(200);
    await root.client.put(`/v1/todos/${waiting.id}/dependencies`, { dependsOn: [dep.id] });
    await w.client.post(`/v1/todos/${manual.id}/block`, { note: 'stuck' });
    const stop = await w.client.post(`/v1/sessions/${w.id}/stop`);
    expect(stop.status).toBe(200);
    expect(stop.body.reopened.sort()).toEqual([plain.id, reserved.id, waiting.id].sort());
    expect(await get(root.client, plain.id)).toMatchObject({ status: 'todo', ready: true });
    expect(await get(root.client, reserved.id)).toMatchObject({ status: 'todo', assignee: w.id });
    expect(await get(root.client, waiting.id)).toMatchObject({ status: 'blocked', blockedBy: [dep.id] });
    expect(await get(root.client, manual.id)).toMatchObject({ status: 'blocked', owner: w.id, note: 'stuck' });
    expect((await w.client.get('/v1/me')).status).toBe(401);
    const ev = (await root.client.get(`/v1/events/log?topic=todo:session:${root.id}&after=0&limit=1000`)).body.events;
    const reopenEvents = ev.filter((e: any) => e.data.reason === 'session-stopped').map((e: any) => [e.data.id, e.event]);
    expect(reopenEvents.sort()).toEqual(
      [
        [plain.id, 'todo'],
        [reserved.id, 'todo'],
        [waiting.id, 'dependency-blocked'],
      ].sort(),
    );
    const blockedEvent = ev.find((e: any) => e.data.reason === 'session-stopped' && e.data.id === waiting.id);
    expect(blockedEvent.data).toMatchObject({ status: 'blocked', blockedBy: [dep.id] });
  });

  it('should soft-delete a session the same way and refuse a stranger', async () => {
    const a = await t.session();
    const stranger = await t.session();
    const item = await add(a.client, 'x');
    await a.client.post(`/v1/todos/${item.id}/claim`);
    expect((await stranger.client.del(`/v1/sessions/${a.id}`)).status).toBe(404);
    const del = await t.admin.del(`/v1/sessions/${a.id}`);
    expect(del.body.session.status).toBe('deleted');
    expect((await t.admin.get(`/v1/todos/${item.id}`)).body.item.status).toBe('todo');
  });
});

describe('claim lease', () => {
  it('should refuse the former owner at once after expiry, before any sweep, whether or not the item was re-claimed', async () => {
    const root = await t.session();
    const [a, b] = await Promise.all([t.session({ parentId: root.id, by: root.client }), t.session({ parentId: root.id, by: root.client })]);
    const item = await add(root.client, 'x');
    const claimed = (await a.client.post(`/v1/todos/${item.id}/claim`)).body.item;
    expect(claimed.leaseExpiresAt).toBeDefined();
    await ageClaim(t.sql, item.id, 1700);
    expect((await get(root.client, item.id)).leaseExpired).toBe(true);
    for (const path of ['done', 'block', 'heartbeat']) {
      const r = await a.client.post(`/v1/todos/${item.id}/${path}`);
      expect([path, r.status, r.body.code]).toEqual([path, 409, 'lease_expired']);
    }
    expect((await a.client.patch(`/v1/todos/${item.id}`, { title: 'y' })).body.code).toBe('lease_expired');
    await runSweep(t.sql, t.config);
    expect((await b.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const late = await a.client.post(`/v1/todos/${item.id}/done`);
    expect(late.status).toBe(403);
    expect((await get(root.client, item.id)).owner).toBe(b.id);
  });

  it('should reopen an idle claim with its assignment kept, and leave a fresh one alone (seed: +20m kept, +40m reopened)', async () => {
    const root = await t.session();
    const a = await t.session({ parentId: root.id, by: root.client });
    const idle = await add(root.client, 'idle', { assignee: a.id });
    const fresh = await add(root.client, 'fresh');
    await a.client.post(`/v1/todos/${idle.id}/claim`);
    await ageClaim(t.sql, idle.id, 1000);
    await a.client.post(`/v1/todos/${fresh.id}/claim`);
    const first = await runSweep(t.sql, t.config);
    expect(first.leaseReopened).toBe(0);
    for (const i of [idle, fresh]) await ageClaim(t.sql, i.id, 700);
    await runSweep(t.sql, t.config);
    expect(await get(root.client, idle.id)).toMatchObject({ status: 'todo', assignee: a.id });
    expect((await get(root.client, fresh.id)).status).toBe('in-progress');
  });

  it('should never reopen anything when claim_lease is 0', async () => {
    const noLease = await startTestApp({ dbUrl: t.dbUrl, todo: { claimLeaseMs: 0 } });
    try {
      const s = await noLease.session();
      const item = await add(s.client, 'x');
      const claimed = (await s.client.post(`/v1/todos/${item.id}/claim`)).body.item;
      expect(claimed.leaseExpiresAt).toBeUndefined();
      await ageClaim(noLease.sql, item.id, 1600);
      expect((await runSweep(noLease.sql, noLease.config)).leaseReopened).toBe(0);
    } finally {
      await noLease.app.close();
      await noLease.sql.end();
    }
  });
});

describe('pg-boss sweeps', () => {
  it('should keep a heartbeating owner’s item through many ticks while another session polls next and never gets it', async () => {
    const app = await startTestApp({ todo: { claimLeaseMs: 1500, sweepIntervalMs: 500 }, sweeps: true });
    try {
      const root = await app.session();
      const [owner, poller] = await Promise.all([app.session({ parentId: root.id, by: root.client }), app.session({ parentId: root.id, by: root.client })]);
      const item = await add(root.client, 'long work');
      await owner.client.post(`/v1/todos/${item.id}/claim`);
      const stolen: string[] = [];
      const until = Date.now() + 5000;
      const beat = (async () => {
        while (Date.now() < until) {
          expect((await owner.client.post(`/v1/todos/${item.id}/heartbeat`)).status).toBe(200);
          await sleep(400);
        }
      })();
      const poll = (async () => {
        while (Date.now() < until) {
          const r = await poller.client.post('/v1/todos/next');
          if (r.body.claimed) stolen.push(r.body.item.id);
          await sleep(250);
        }
      })();
      await Promise.all([beat, poll]);
      expect(stolen).toEqual([]);
      expect((await get(root.client, item.id)).owner).toBe(owner.id);
      // Stop heart-beating: a sweep tick reopens it once the lease has run out.
      await ageClaim(app.sql, item.id, 1500);
      expect(await eventually(async () => (await get(root.client, item.id)).status === 'todo')).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('should reopen each expired item once, with one event, when two replicas sweep every second', async () => {
    const a = await startTestApp({ todo: { claimLeaseMs: 1000, sweepIntervalMs: 1000 }, sweeps: true });
    const b = await startTestApp({ dbUrl: a.dbUrl, todo: { claimLeaseMs: 1000, sweepIntervalMs: 1000 }, sweeps: true });
    try {
      const s = await a.session();
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const item = await add(s.client, `x${i}`);
        await s.client.post(`/v1/todos/${item.id}/claim`);
        ids.push(item.id);
      }
      for (const id of ids) await ageClaim(a.sql, id, 1000);
      const reopened = () => a.sql<{ subject_id: string; n: number }[]>`select subject_id, count(*)::int as n from events
                                where payload->>'reason' = 'lease-expired' group by subject_id`;
      expect(await eventually(async () => (await reopened()).length === ids.length)).toBe(true);
      // More ticks of both replicas (every second each): nothing is reopened twice.
      await sleep(2500);
      const rows = await reopened();
      expect(rows.map((r) => r.subject_id).sort()).toEqual(ids.sort());
      expect(rows.every((r) => r.n === 1)).toBe(true);
    } finally {
      await b.sweeper?.stop();
      await b.app.close();
      await b.sql.end();
      await a.close();
    }
  });
});

describe('retention', () => {
  it('should keep a done parent with an unfinished child, and a referenced done dependency until its edge is cleared', async () => {
    const s = await t.session();
    const parent = await add(s.client, 'parent');
    const child = await add(s.client, 'child', { parentId: parent.id });
    const dep = await add(s.client, 'dep');
    const x = await add(s.client, 'x', { dependsOn: [dep.id] });
    const lone = await add(s.client, 'lone');
    for (const i of [parent, dep, lone]) {
      await s.client.post(`/v1/todos/${i.id}/claim`);
      await s.client.post(`/v1/todos/${i.id}/done`);
      await ageItem(t.sql, i.id, 1200);
    }
    await runSweep(t.sql, t.config);
    expect((await s.client.get(`/v1/todos/${lone.id}`)).status).toBe(404);
    expect((await get(s.client, parent.id)).status).toBe('done');
    expect((await get(s.client, child.id)).status).toBe('todo');
    expect((await get(s.client, dep.id)).status).toBe('done');
    await s.client.put(`/v1/todos/${x.id}/dependencies`, { dependsOn: [] });
    await runSweep(t.sql, t.config);
    expect((await s.client.get(`/v1/todos/${dep.id}`)).status).toBe(404);
    const removed = (await s.client.get(`/v1/events/log?topic=todo:session:${s.id}&after=0&limit=1000`)).body.events.filter(
      (e: any) => e.event === 'removed' && e.data.reason === 'retention',
    );
    expect(removed.map((e: any) => e.data.id).sort()).toEqual([lone.id, dep.id].sort());
  });

  it('should delete nothing when retention is 0, and keep items younger than retention', async () => {
    const s = await t.session();
    const item = await add(s.client, 'young');
    await s.client.post(`/v1/todos/${item.id}/claim`);
    await s.client.post(`/v1/todos/${item.id}/done`);
    await runSweep(t.sql, t.config);
    expect((await get(s.client, item.id)).status).toBe('done');
    await ageItem(t.sql, item.id, 1100);
    await runSweep(t.sql, { ...t.config, todo: { ...t.config.todo, retentionMs: 0 } });
    expect((await get(s.client, item.id)).status).toBe('done');
  });
});

describe('reload', () => {
  it('should apply reloadable keys through POST /v1/admin/reload and refuse sessions', async () => {
    const s = await t.session();
    expect((await s.client.post('/v1/admin/reload')).status).toBe(403);
    const r = await t.admin.post('/v1/admin/reload');
    expect(r.status).toBe(200);
    expect(r.body.todo.max_title).toBe(500);
  });
});
