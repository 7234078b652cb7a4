/**
 * SIGTERM while writes are in flight. A real server process; the test holds a lock
 * on the todos table so that N concurrent POSTs are in flight (each waits for the lock inside its
 * transaction), then sends SIGTERM and releases the lock a moment later.
 *
 * The rule checked: a request that got a socket error was not stored, and every stored item's
 * request got its 201. With the drain every in-flight writer gets its 201; a request sent after
 * the signal on a kept-alive connection gets 503 problem+json `shutting_down` (Retry-After,
 * Connection: close); a new connection is refused; the SSE stream ends at once. When the drain
 * deadline passes first, the cut requests' transactions roll back: still nothing stored without
 * its 201.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { createTestDatabase } from '../helpers/db.js';
import { openSse } from '../helpers/sse.js';
import { killServers, spawnServer, waitReady, type ServerProcess } from '../helpers/server.js';

const WRITERS = 8;
const ADMIN = `coord_drain_${randomBytes(12).toString('hex')}`;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: postgres.Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  sql = postgres(db.url, { max: 3, onnotice: () => {} });
});
afterEach(() => killServers());
afterAll(async () => {
  await sql.end({ timeout: 1 });
  await db.drop();
});

interface Outcome {
  title: string;
  status?: number;
  error?: string;
}

/** Holds `lock table todos in share mode` (inserts wait) until `release()`. */
async function lockTodos(): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = sql.begin(async (t) => {
    await t`lock table todos in share mode`;
    locked();
    await released;
  });
  await isLocked;
  return {
    release: async () => {
      release();
      await tx;
    },
  };
}

/** Waits until `n` backends of the test database wait for a lock. */
async function waitBlocked(n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [{ waiting }] = await sql<
      { waiting: number }[]
    >`select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    if (waiting >= n) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`fewer than ${n} requests reached the lock`);
}

/** One raw HTTP/1.1 connection, for requests sent one after another on the same kept-alive socket. */
function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buf = Buffer.alloc(0);
  let ended = false;
  const waiters: (() => void)[] = [];
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    waiters.splice(0).forEach((w) => w());
  });
  socket.on('close', () => {
    ended = true;
    waiters.splice(0).forEach((w) => w());
  });
  socket.on('error', () => {});
  const connected = new Promise<void>((r) => socket.once('connect', () => r()));
  return {
    connected,
    send(method: string, path: string, token: string, body?: unknown) {
      const text = body === undefined ? '' : JSON.stringify(body);
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: keep-alive\r\n` +
          (body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n`) +
          '\r\n' +
          text,
      );
    },
    /** The next response (status, lower-cased headers, body), or undefined when the connection closed first. */
    async next(): Promise<{ status: number; headers: Record<string, string>; body: string } | undefined> {
      for (;;) {
        const head = buf.indexOf('\r\n\r\n');
        if (head >= 0) {
          const lines = buf.subarray(0, head).toString().split('\r\n');
          const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
          const len = Number(headers['content-length'] ?? 0);
          if (buf.length >= head + 4 + len) {
            const body = buf.subarray(head + 4, head + 4 + len).toString();
            buf = buf.subarray(head + 4 + len);
            return { status: Number(lines[0].split(' ')[1]), headers, body };
          }
        }
        if (ended) return undefined;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    closed: new Promise<void>((r) => socket.once('close', () => r())),
  };
}

async function startServer(env: Record<string, string>): Promise<{ server: ServerProcess; base: string; token: string; root: string }> {
  const server = spawnServer(await freePort(), { DATABASE_URL: db.url, COORD_ADMIN_TOKEN: ADMIN, COORD_SWEEPS: 'off', COORD_TODO_BUSY_TIMEOUT: '30s', ...env });
  expect(await waitReady(server), server.output()).toBe(true);
  const base = `http://127.0.0.1:${server.port}`;
  const res = await fetch(`${base}/v1/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `w-${randomBytes(3).toString('hex')}` }),
  });
  expect(res.status).toBe(201);
  const { session, token } = (await res.json()) as { session: { id: string }; token: string };
  return { server, base, token, root: session.id };
}

function writer(base: string, token: string, title: string): Promise<Outcome> {
  return fetch(`${base}/v1/todos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title }),
    signal: AbortSignal.timeout(30_000),
  }).then(
    async (r) => ({ title, status: r.status, body: await r.text() }),
    (err: Error) => ({ title, error: `${err.name}: ${(err.cause as { code?: string } | undefined)?.code ?? err.message}` }),
  );
}

async function storedTitles(titles: string[]): Promise<Set<string>> {
  const rows = await sql<{ title: string }[]>`select title from todos where title = any(${titles})`;
  return new Set(rows.map((r) => r.title));
}

describe('SIGTERM with writes in flight', () => {
  it('should let every in-flight write finish with its 201, answer later requests 503 shutting_down, and refuse new connections', async () => {
    const { server, base, token, root } = await startServer({ COORD_DRAIN_TIMEOUT: '15s' });
    const sse = await openSse(`${base}/v1/events?topic=${encodeURIComponent(`todo:session:${root}`)}`, token);
    expect(sse.status).toBe(200);
    const raw = rawConnection(server.port);
    await raw.connected;

    const lock = await lockTodos();
    const tag = randomBytes(4).toString('hex');
    const writes = Array.from({ length: WRITERS }, (_, i) => writer(base, token, `drain-${tag}-${i}`));
    raw.send('POST', '/v1/todos', token, { title: `drain-${tag}-raw` });
    await waitBlocked(WRITERS + 1);

    server.child.kill('SIGTERM');
    await sse.closed; // the stream ends at once, long before the in-flight writes finish
    // A request after the signal, on the kept-alive connection whose first request is in flight.
    raw.send('GET', '/v1/me', token);
    // A request after the signal on a new connection.
    await new Promise((r) => setTimeout(r, 300));
    const late = await writer(base, token, `drain-${tag}-late`);
    await lock.release();

    const outcomes = [...(await Promise.all(writes))];
    const first = await raw.next();
    const second = await raw.next();
    await raw.closed; // the server closed the kept-alive connection after its last answer
    expect(await server.exited).toBe(0);

    const stored = await storedTitles([...outcomes.map((o) => o.title), `drain-${tag}-raw`, late.title]);
    expect(
      outcomes.filter((o) => o.error && stored.has(o.title)),
      'socket errors for stored items',
    ).toEqual([]);
    expect(outcomes.map((o) => o.status ?? o.error)).toEqual(Array(WRITERS).fill(201));
    for (const o of outcomes) expect(stored.has(o.title)).toBe(true);

    expect(first?.status).toBe(201);
    expect(stored.has(`drain-${tag}-raw`)).toBe(true);
    expect(second?.status).toBe(503);
    expect(second?.headers['content-type']).toContain('application/problem+json');
    expect(second?.headers['retry-after']).toBe('1');
    expect(second?.headers.connection).toBe('close');
    expect(JSON.parse(second!.body).code).toBe('shutting_down');

    // The late request found the listener closed (or, had it raced the close, a 503): never stored.
    expect(late.error ?? String(late.status)).toMatch(/ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|503/);
    expect(stored.has(late.title)).toBe(false);
  });

  it('should cut requests still running at the drain deadline and roll their writes back', async () => {
    const { server, base, token } = await startServer({ COORD_DRAIN_TIMEOUT: '1s' });
    const lock = await lockTodos();
    const tag = randomBytes(4).toString('hex');
    const writes = Array.from({ length: WRITERS }, (_, i) => writer(base, token, `cut-${tag}-${i}`));
    await waitBlocked(WRITERS);
    server.child.kill('SIGTERM');
    const outcomes = await Promise.all(writes); // cut at the 1 s deadline
    await new Promise((r) => setTimeout(r, 500));
    await lock.release(); // had the transactions survived, they would commit now
    expect(await server.exited).toBe(0);
    await new Promise((r) => setTimeout(r, 200));

    const stored = await storedTitles(outcomes.map((o) => o.title));
    expect(
      outcomes.filter((o) => o.error && stored.has(o.title)),
      'socket errors for stored items',
    ).toEqual([]);
    expect(outcomes.filter((o) => o.status === 201 && !stored.has(o.title))).toEqual([]);
    expect(outcomes.every((o) => o.error)).toBe(true); // every one was in flight at the deadline
    expect(server.output()).toContain('drain deadline reached');
  });
});
