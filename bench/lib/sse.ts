/**
 * Many SSE subscribers from one process: each is its own socket (`node:http`, no agent), its
 * stream parsed with `eventsource-parser`. Used by the event-latency and memory benchmarks.
 */
import http from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseStream {
  /** Closes the socket. */
  close(): void;
}

/**
 * Opens `GET /v1/events?topic=…` and resolves once the response headers (200) arrive. Every
 * event (comments and `retry:` excluded) goes to `onEvent`, stamped with `performance.now()` at
 * parse time. Rejects on a non-200 status.
 */
export function openSse(base: string, token: string, topic: string, onEvent: (e: EventSourceMessage, at: number) => void): Promise<SseStream> {
  const url = new URL(`/v1/events?topic=${encodeURIComponent(topic)}`, base);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'GET', agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => reject(new Error(`SSE ${topic}: HTTP ${res.statusCode} ${body.slice(0, 300)}`)));
        return;
      }
      const parser = createParser({ onEvent: (e) => onEvent(e, performance.now()) });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', () => {});
      resolve({ close: () => req.destroy() });
    });
    req.on('error', (err) => reject(err));
    req.end();
  });
}

/** Opens `count` streams, `parallel` at a time (bounded so the server is not hit by a connect storm). */
export async function openMany(count: number, parallel: number, open: (i: number) => Promise<SseStream>): Promise<SseStream[]> {
  const streams: SseStream[] = new Array(count);
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: Math.min(parallel, count) }, async () => {
        while (next < count) {
          const i = next++;
          streams[i] = await open(i);
        }
      }),
    );
  } catch (err) {
    for (const s of streams) s?.close();
    throw err;
  }
  return streams;
}
