/**
 * The readers' horizon (src/events/events.repo.ts): an event is delivered as soon as
 * every transaction that may still write an event before it has ended. Transactions that cannot
 * (one in another database of the cluster, one of this database that never touched `events`) no
 * longer hold delivery back; an event writer still does, and resume stays gap-free and
 * duplicate-free when a writer holds its transaction id long before it writes its event.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/db/tx.js';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { appendEvents, readAfter, START, type Cursor } from '../../src/events/events.repo.js';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** A connection that opens a transaction, runs `statements` in it, and keeps it open until `end()`. */
async function openTransaction(url: string, statements: string[]): Promise<{ xid: string; end(): Promise<void> }> {
  const conn = postgres(url, { max: 1, onnotice: () => {} });
  const reserved = await conn.reserve();
  await reserved.unsafe('begin');
  for (const s of statements) await reserved.unsafe(s);
  const [{ xid }] = await reserved.unsafe<{ xid: string }[]>('select pg_current_xact_id()::text as xid');
  return {
    xid,
    async end() {
      await reserved.unsafe('commit');
      reserved.release();
      await conn.end();
    },
  };
}

/** Milliseconds until `GET /v1/events/log` shows the item's `todo` event (gives up after 5 s). */
async function msUntilVisible(token: string, topic: string, itemId: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    const res = await fetch(`${t.base}/v1/events/log?topic=${encodeURIComponent(topic)}&after=0`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { events: { data: { id: string } }[] };
    if (body.events.some((e) => e.data.id === itemId)) return performance.now() - started;
    if (performance.now() - started > 5000) return Infinity;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('event visibility and unrelated transactions', () => {
  it('delivers an event in under a second while a write transaction of another database of the cluster stays open', async () => {
    const other = await createTestDatabase({ empty: true });
    const foreign = await openTransaction(other.url, ['create table batch_job (n int)', 'insert into batch_job values (1)']);
    try {
      const s = await t.session();
      const item = await addItem(s.client, 'written while another database has an open write');
      expect(await msUntilVisible(s.token, `todo:session:${s.id}`, item.id)).toBeLessThan(1000);
    } finally {
      await foreign.end();
      await other.drop();
    }
  });

  it('delivers an event in under a second while a transaction of this database that touches no event stays open', async () => {
    const s = await t.session();
    const first = await addItem(s.client, 'an operator edits this one by hand');
    // An operator's hand edit of an item, left open: a transaction id, row locks, no event.
    const bystander = await openTransaction(t.dbUrl, [`update todos set title = 'edited by hand' where id = '${first.id}'`]);
    try {
      const item = await addItem(s.client, 'written while the hand edit is open');
      expect(await msUntilVisible(s.token, `todo:session:${s.id}`, item.id)).toBeLessThan(1000);
    } finally {
      await bystander.end();
    }
  });

  it('still holds back events behind a running event writer, then delivers both in (tx, id) order', async () => {
    const s = await t.session();
    const topic = `todo:session:${s.id}`;
    // A writer that declared itself (locked `events`) and holds a transaction id older than the next event's.
    const writer = await openTransaction(t.dbUrl, ['lock table events in row exclusive mode', 'select pg_current_xact_id()']);
    let ended = false;
    try {
      const item = await addItem(s.client, 'committed behind an older event writer');
      const page = (await s.client.get(`/v1/events/log?topic=${encodeURIComponent(topic)}&after=0`)).body;
      expect(page.events.map((e: { data: { id: string } }) => e.data.id)).not.toContain(item.id);
      await writer.end();
      ended = true;
      expect(await msUntilVisible(s.token, topic, item.id)).toBeLessThan(1000);
    } finally {
      if (!ended) await writer.end();
    }
  });
});

describe('gap-free resume with writers that hold their transaction id before they write', () => {
  it('delivers every event exactly once, in order, while writers take an id, wait, then write their event', async () => {
    const topic = `todo:horizon-race-${Date.now()}`;
    const actor = { kind: 'user' as const, id: 'u-horizon-race', token: null };
    const writers = 8;
    const perWriter = scaled(60, 15);
    let running = writers;
    const writer = async (w: number) => {
      for (let i = 0; i < perWriter; i++) {
        await withTx(t.sql, async (tx) => {
          // The transaction id exists before the event does (as in every write that changes a row first).
          await tx`select pg_current_xact_id()`;
          await new Promise((r) => setTimeout(r, Math.random() * 8));
          await appendEvents(tx, DEFAULT_TEAM, [{ topic, event: 'race', payload: { w, i } }], actor);
        });
      }
      running--;
    };
    const seen: number[] = [];
    const reader = async () => {
      let cursor: Cursor = START;
      for (;;) {
        const done = running === 0;
        const { events } = await readAfter(t.sql, DEFAULT_TEAM, topic, cursor, 50);
        for (const e of events) seen.push(e.id);
        if (events.length > 0) cursor = { tx: events[events.length - 1].tx, id: events[events.length - 1].id };
        else if (done) return;
        else await new Promise((r) => setTimeout(r, 1));
      }
    };
    await Promise.all([reader(), ...Array.from({ length: writers }, (_, w) => writer(w))]);
    const stored = await t.sql<{ id: number }[]>`select id from events where topic = ${topic} order by tx, id`;
    expect(stored).toHaveLength(writers * perWriter);
    expect(seen).toEqual(stored.map((r) => Number(r.id)));
  });

  it('refuses to write events in a transaction that did not declare itself an event writer', async () => {
    const actor = { kind: 'user' as const, id: 'u-horizon-race', token: null };
    await expect(t.sql.begin((tx) => appendEvents(tx, DEFAULT_TEAM, [{ topic: 'todo:undeclared', event: 'x', payload: {} }], actor))).rejects.toThrow(/withTx/);
  });
});
