/**
 * `GET /v1/events/log?subjectId=`: the events about one object of a topic (the dashboard's item
 * history), paged with the topic's own cursor, under the topic's access rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('GET /v1/events/log with subjectId', () => {
  it('returns only the events about that item, paging past other items’ events', async () => {
    const s = await t.session();
    const topic = `todo:session:${s.id}`;
    const item = await addItem(s.client, 'the one');
    // More events of other items than one page holds, then more of the item.
    for (let i = 0; i < 7; i++) await addItem(s.client, `other ${i}`);
    expect((await s.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    for (let i = 0; i < 3; i++) await addItem(s.client, `later ${i}`);
    expect((await s.client.post(`/v1/todos/${item.id}/done`, {})).status).toBe(200);

    const all = (await s.client.get(`/v1/events/log?topic=${topic}&after=0&limit=1000`)).body.events;
    const about = all.filter((e: any) => e.data.id === item.id);
    expect(about.map((e: any) => e.event)).toEqual(['added', 'claimed', 'done']);
    expect(all.length).toBeGreaterThan(10);

    // Two per page: the cursor of each page is the topic's seq of the last event returned.
    const got: any[] = [];
    let after = 0;
    for (let n = 0; n < 10; n++) {
      const r = await s.client.get(`/v1/events/log?topic=${topic}&after=${after}&limit=2&subjectId=${item.id}`);
      expect(r.status).toBe(200);
      got.push(...r.body.events);
      if (r.body.events.length === 0) break;
      after = r.body.nextAfter;
    }
    expect(got.map((e: any) => e.seq)).toEqual(about.map((e: any) => e.seq));
    expect(got.every((e: any) => e.data.id === item.id)).toBe(true);
    // A subject with no events in the topic: an empty page, not an error.
    const none = await s.client.get(`/v1/events/log?topic=${topic}&after=0&subjectId=no-such-item`);
    expect(none.status).toBe(200);
    expect(none.body.events).toEqual([]);
  });

  it('keeps the topic’s access rule: another subtree learns nothing', async () => {
    const s = await t.session();
    const other = await t.session();
    const item = await addItem(s.client, 'private');
    const r = await other.client.get(`/v1/events/log?topic=todo:session:${s.id}&subjectId=${item.id}`);
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toContain('private');
  });
});
