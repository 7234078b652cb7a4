/**
 * `events.follow` reconnect mechanics against a scripted SSE server (the external boundary): a
 * silent stream is cut after `idleTimeoutMs`, every reconnect sends `Last-Event-ID`, 503 and a
 * closed stream are retried, a 404 ends the iterator with `NotFound`, and `close()` ends it cleanly.
 * The end-to-end resume across a real server restart is in test/cli/cli.events.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, NotFound, Unavailable, type CoordEvent } from '@coord/sdk';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** Serves the n-th connection with `script[n]`; records each request's Last-Event-ID. */
async function scripted(script: ((req: IncomingMessage, res: ServerResponse) => void)[]) {
  const seen: (string | undefined)[] = [];
  server = createServer((req, res) => {
    seen.push(req.headers['last-event-id'] as string | undefined);
    const step = script[seen.length - 1] ?? ((_q, r) => r.writeHead(500).end());
    step(req, res);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { base: `http://127.0.0.1:${port}`, seen };
}

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const frame = (id: number, event: string, data: object) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

describe('events.follow reconnects', () => {
  it('should cut a silent stream, retry 503 and closed streams, resume with Last-Event-ID each time, and throw NotFound', async () => {
    const { base, seen } = await scripted([
      (_q, res) => {
        sse(res);
        res.write(frame(5, 'added', { id: 'td-1' })); // then silence: the idle timeout must cut it
      },
      (_q, res) => res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '0' }).end(JSON.stringify({ code: 'busy', status: 503 })),
      (_q, res) => {
        sse(res);
        res.end(`${frame(6, 'claimed', { id: 'td-1' })}: heartbeat\n\n`);
      },
      (_q, res) => res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code: 'not_found', status: 404, detail: 'gone' })),
    ]);
    const causes: unknown[] = [];
    const client = createClient({ baseUrl: base, token: 't' });
    const got: CoordEvent[] = [];
    let thrown: unknown;
    try {
      for await (const e of client.events.follow('session:s-1', {
        after: 4,
        idleTimeoutMs: 200,
        minDelayMs: 10,
        maxDelayMs: 40,
        onReconnect: (i) => causes.push(i.cause),
      })) {
        got.push(e);
      }
    } catch (err) {
      thrown = err;
    }
    expect(got.map((e) => `${e.seq} ${e.event} ${e.data.id} ${e.topic}`)).toEqual(['5 added td-1 todo:session:s-1', '6 claimed td-1 todo:session:s-1']);
    expect(seen).toEqual(['4', '5', '5', '6']);
    expect(String((causes[0] as Error).message ?? causes[0])).toBe('no data for 200 ms');
    expect(causes[1]).toBeInstanceOf(Unavailable);
    expect(thrown).toBeInstanceOf(NotFound);
  });

  it('should end the iteration without an error when closed while waiting', async () => {
    const { base } = await scripted([(_q, res) => sse(res)]);
    const stream = createClient({ baseUrl: base, token: 't' }).events.follow('todo:session:s-1');
    const done = (async () => {
      const out: CoordEvent[] = [];
      for await (const e of stream) out.push(e);
      return out;
    })();
    await new Promise((r) => setTimeout(r, 100));
    stream.close();
    expect(await done).toEqual([]);
  });
});
