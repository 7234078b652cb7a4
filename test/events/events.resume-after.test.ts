import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** Opens a stream, returns its Coord-Resume-After header and closes it before any event. */
async function openAndDrop(token: string, topic: string, lastEventId?: string): Promise<string | null> {
  const ctrl = new AbortController();
  const res = await fetch(`${t.base}/v1/events?topic=${encodeURIComponent(topic)}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: ctrl.signal,
  });
  expect(res.status).toBe(200);
  const head = res.headers.get('coord-resume-after');
  ctrl.abort();
  return head;
}

describe('Coord-Resume-After: a stream names the point it starts after', () => {
  it('lets a client that saw no event resume with no gap, from an empty topic and from one with history', async () => {
    const s = await t.session();
    const topic = `todo:session:${s.id}`;
    // Empty topic: the head is "after 0", and resuming from it delivers what came meanwhile.
    const empty = await openAndDrop(s.token, topic);
    expect(empty).toBe('0');
    const first = await addItem(s.client, 'first');
    let page = (await s.client.get(`/v1/events/log?topic=${topic}&after=${empty}`)).body;
    expect(page.events.map((e: any) => e.data.id)).toEqual([first.id]);

    // A topic with history: the header is its last event before the head, never a later one.
    const head = await openAndDrop(s.token, topic);
    expect(Number(head)).toBe(page.events[0].seq);
    const missed = [await addItem(s.client, 'missed 1'), await addItem(s.client, 'missed 2')];
    page = (await s.client.get(`/v1/events/log?topic=${topic}&after=${head}`)).body;
    expect(page.events.map((e: any) => e.data.id)).toEqual(missed.map((m) => m.id));
    // A stream resumed with Last-Event-ID names that id.
    expect(await openAndDrop(s.token, topic, String(page.events[0].seq))).toBe(String(page.events[0].seq));
  });
});
