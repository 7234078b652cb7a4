/**
 * The SDK's safe retries: every POST carries an Idempotency-Key, and a call whose
 * answer was lost on the network (a real TCP proxy between the SDK and a real server drops the
 * first answer after the server has acted), or that got a 503, is retried with the same key:
 * exactly one item is created, exactly one claim recorded.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { ConnectionFailed, createClient, type CoordClient } from '@coord/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHash } from '../../src/idempotency/idempotency.seal.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: CoordClient;
beforeAll(async () => {
  t = await startTestApp({ todo: { busyTimeoutMs: 200 } });
  admin = createClient({ baseUrl: t.base, token: t.admin.token });
});
afterAll(async () => t?.close());

/**
 * A TCP proxy to the test server. `dropNext(prefix)` arms it: the next request whose first line
 * starts with `prefix` is forwarded whole, and the connection is cut the moment the server's
 * answer arrives, so the server acted but the client never hears back. `keys` holds the
 * `Idempotency-Key` each request line was sent with (the database keeps only its hash).
 */
async function proxy(target: string) {
  const { hostname, port } = new URL(target);
  let armed: string | undefined;
  const seen: string[] = [];
  const keys: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(port), hostname);
    sockets.add(upstream);
    let dropping = false;
    client.on('data', (chunk) => {
      const text = chunk.toString('latin1');
      const line = text.split('\r\n', 1)[0];
      if (/^[A-Z]+ \//.test(line)) {
        seen.push(line);
        keys.push(/\r\nidempotency-key: *([^\r]*)\r\n/i.exec(text)?.[1] ?? '');
        if (armed && line.startsWith(armed)) {
          armed = undefined;
          dropping = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (dropping) {
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    keys,
    dropNext(prefix: string) {
      armed = prefix;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('SDK retries with Idempotency-Key', () => {
  it('should create exactly one item when the first answer is lost on the network', async () => {
    const { session, token } = await admin.sessions.create({});
    const p = await proxy(t.base);
    try {
      const c = createClient({ baseUrl: p.url, token, retryMinDelayMs: 10 });
      p.dropNext('POST /v1/todos ');
      const item = await c.todos.add({ title: 'exactly once' });
      expect(item.title).toBe('exactly once');
      expect(p.seen.filter((l) => l.startsWith('POST /v1/todos '))).toHaveLength(2);
      const items = await createClient({ baseUrl: t.base, token }).todos.listAll({});
      expect(items.map((i) => i.id)).toEqual([item.id]);
      const [{ n }] = await t.sql<
        { n: number }[]
      >`select count(*)::int as n from idempotency_keys where principal = ${`session:${session.id}`} and request = 'POST /v1/todos'`;
      expect(n).toBe(1);
    } finally {
      await p.close();
    }
  });

  it('should replay a claim whose answer was lost instead of claiming twice', async () => {
    const { token } = await admin.sessions.create({});
    const direct = createClient({ baseUrl: t.base, token });
    const item = await direct.todos.add({ title: 'claim once' });
    const p = await proxy(t.base);
    try {
      const c = createClient({ baseUrl: p.url, token, retryMinDelayMs: 10 });
      p.dropNext(`POST /v1/todos/${item.id}/claim `);
      const claimed = await c.todos.claim(item.id);
      expect(claimed).toMatchObject({ id: item.id, status: 'in-progress', revision: 2 });
      expect(p.seen.filter((l) => l.startsWith(`POST /v1/todos/${item.id}/claim `))).toHaveLength(2);
      expect((await direct.todos.get(item.id)).revision).toBe(2);
    } finally {
      await p.close();
    }
  });

  it('should surface ConnectionFailed with retries: 0, though the server acted (why the retries exist)', async () => {
    const { token } = await admin.sessions.create({});
    const p = await proxy(t.base);
    try {
      const c = createClient({ baseUrl: p.url, token, retries: 0 });
      p.dropNext('POST /v1/todos ');
      await expect(c.todos.add({ title: 'lost answer' })).rejects.toBeInstanceOf(ConnectionFailed);
      const items = await createClient({ baseUrl: t.base, token }).todos.listAll({});
      expect(items.map((i) => i.title)).toEqual(['lost answer']);
    } finally {
      await p.close();
    }
  });

  it('should retry a 503 busy with the same key until it succeeds', async () => {
    const { session, token } = await admin.sessions.create({});
    const p = await proxy(t.base);
    try {
      const c = createClient({ baseUrl: p.url, token, retryMinDelayMs: 10 });
      const item = await c.todos.add({ title: 'busy' });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const tx = t.sql.begin(async (q) => {
        await q`select id from todos where id = ${item.id} for update`;
        locked();
        await held;
      });
      await isLocked;
      const claim = c.todos.claim(item.id);
      // Release the lock once a claim has waited on it and given up (busy_timeout 200 ms): a 503.
      for (;;) {
        const [{ n }] = await t.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where request = ${`POST /v1/todos/${item.id}/claim`}`;
        const [{ w }] = await t.sql<{ w: number }[]>`select count(*)::int as w from pg_locks where not granted`;
        if (n === 0 && w === 0 && (await seenBusy())) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      release();
      await tx;
      const claimed = await claim;
      expect(claimed).toMatchObject({ status: 'in-progress', revision: 2 });
      // Every attempt carried the same random UUID; the one row holds only its hash.
      const sent = p.keys.filter((_, i) => p.seen[i].startsWith(`POST /v1/todos/${item.id}/claim `));
      expect(sent.length).toBeGreaterThanOrEqual(2);
      expect(new Set(sent).size).toBe(1);
      expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/);
      const rows = await t.sql<{ key_hash: string }[]>`select key_hash from idempotency_keys where request = ${`POST /v1/todos/${item.id}/claim`}`;
      expect(rows.map((r) => r.key_hash)).toEqual([keyHash(`session:${session.id}`, sent[0])]);
    } finally {
      await p.close();
    }
  });
});

/** True once the app has answered a 503 on the claim route (from its Prometheus counter). */
async function seenBusy(): Promise<boolean> {
  const r = await fetch(`${t.base}/metrics`);
  const text = await r.text();
  return /coord_http_requests_total\{[^}]*route="\/v1\/todos\/:id\/claim"[^}]*status="503"[^}]*\} [1-9]/.test(text);
}
