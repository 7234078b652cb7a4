/**
 * Readers that stop reading. A frozen reader is a raw socket that sent its request,
 * saw the response head and then never reads again (as a stopped process's does: its host still
 * acknowledges TCP until the buffers fill). Such a stream must end and stop counting against the
 * caps: with traffic, once nothing could be written for a whole heartbeat interval (`stalled`);
 * on an idle topic, at COORD_SSE_MAX_AGE (`max_age`). A reader that does read is never cut.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/db/tx.js';
import { appendEvents } from '../../src/events/events.repo.js';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { openSse } from '../helpers/sse.js';

/** Opens `topic` as `token` on a raw socket, waits for the 200 head, then stops reading. */
async function frozenReader(t: TestApp, token: string, topic: string): Promise<net.Socket> {
  const { port, hostname } = new URL(t.base);
  const sock = net.connect(Number(port), hostname);
  await once(sock, 'connect');
  sock.write(
    `GET /v1/events?topic=${encodeURIComponent(topic)} HTTP/1.1\r\nHost: coord\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  const head = await new Promise<string>((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        sock.off('data', onData);
        resolve(buf);
      }
    };
    sock.on('data', onData);
  });
  expect(head).toMatch(/^HTTP\/1\.1 200/);
  sock.pause();
  return sock;
}

async function closedBy(t: TestApp, reason: string): Promise<number> {
  const m = parsePrometheus(await (await fetch(`${t.base}/metrics`)).text());
  return m.value('coord_sse_streams_closed_total', { reason }) ?? 0;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a reader that stops reading, on a topic with traffic', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { sseHeartbeatMs: 100, sseMaxAgeMs: 0 } });
  });
  afterAll(async () => t?.close());

  it('is ended as stalled and stops counting, while a reader that reads the same events keeps its stream', async () => {
    const s = await t.session();
    const topic = `todo:session:${s.id}`;
    const reading = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(topic)}`, s.token);
    let readingClosed = false;
    void reading.closed.then(() => (readingClosed = true));
    const frozen = await frozenReader(t, s.token, topic);
    await until('both streams open', () => t.app.coord.openStreams() === 2, 5000);
    // Bursts of large events, each followed by three heartbeats of quiet: the frozen reader's
    // socket buffers fill, then what waits for it cannot move for a whole interval.
    let sentEvents = 0;
    const started = Date.now();
    while (t.app.coord.openStreams() === 2 && sentEvents < 2000) {
      await withTx(t.sql, (tx) =>
        appendEvents(
          tx,
          DEFAULT_TEAM,
          Array.from({ length: 30 }, (_, i) => ({ topic, event: 'bulk-test', payload: { i, pad: 'x'.repeat(16_000) } })),
          { kind: 'user', id: 'u-test', token: null },
        ),
      );
      sentEvents += 30;
      await new Promise((r) => setTimeout(r, 300));
    }
    console.log(`frozen reader ended after ${sentEvents} events of 16 kB (${Date.now() - started} ms)`);
    expect(t.app.coord.openStreams()).toBe(1);
    expect(await closedBy(t, 'stalled')).toBe(1);
    expect(await closedBy(t, 'slow')).toBe(0);
    // The reader that reads got every event and is still open.
    await reading.until((events) => events.filter((e) => e.event === 'bulk-test').length === sentEvents, 20_000);
    expect(readingClosed).toBe(false);
    reading.close();
    frozen.destroy();
  });
});

describe('a reader that stops reading, on an idle topic', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { sseHeartbeatMs: 200, sseMaxAgeMs: 1500 } });
  });
  afterAll(async () => t?.close());

  it('is ended at COORD_SSE_MAX_AGE and stops counting against the caps', async () => {
    const s = await t.session();
    const frozen = await Promise.all(Array.from({ length: 20 }, () => frozenReader(t, s.token, `todo:session:${s.id}`)));
    await until('20 streams open', () => t.app.coord.openStreams() === 20, 5000);
    await until('every frozen stream ended', () => t.app.coord.openStreams() === 0, 5000);
    expect(await closedBy(t, 'max_age')).toBe(20);
    for (const f of frozen) f.destroy();
  });
});
