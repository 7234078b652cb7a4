/**
 * porsager/postgres#1208: when the backend of a transaction or a reserved connection
 * dies, postgres.js 3.4.9 writes the next message (the transaction's ROLLBACK, the next query) in a
 * `setImmediate` to a socket it has already set to null, and the TypeError ends the process; and a
 * query sent between a socket error and the close never settles. patches/postgres+3.4.9.patch
 * (patch-package, the postinstall script) fixes both; without it these tests end in an unhandled TypeError or a hang.
 *
 * porsager/postgres#1223: the server's error for a query whose backend was ended (FATAL 57P01) stayed
 * with the connection object and was replayed onto the first query of its next connection, which
 * also skipped the `target_session_attrs` check there (test/db/failover.test.ts); the same patch
 * clears it when the socket closes.
 */
import net from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDriverPatched, reconnectBackoff } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/db.js';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let killer: postgres.Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  killer = postgres(db.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await killer.end();
  await db.drop();
});

describe('postgres.js when a backend dies under it', () => {
  it('should carry the guard for porsager/postgres#1208', () => {
    expect(postgresDriverPatched()).toBe(true);
  });

  it('should reject a transaction whose backend was terminated, and serve the next query', async () => {
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    try {
      const err = await sql
        .begin(async (tx) => {
          const [{ pid }] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
          await killer`select pg_terminate_backend(${pid})`;
          await new Promise((r) => setTimeout(r, 100));
          await tx`select 1`;
        })
        .then(
          () => undefined,
          (e: { code?: string }) => e.code,
        );
      expect(['CONNECTION_CLOSED', 'ECONNRESET', '57P01']).toContain(err);
      await new Promise((r) => setTimeout(r, 200)); // the ROLLBACK's deferred write has run by now
      const [{ one }] = await sql<{ one: number }[]>`select 1 as one`;
      expect(one).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('should reject every query on a reserved connection whose backend was terminated, none hanging', { timeout: 30_000 }, async () => {
    // The second query is sent from the first one's rejection handler: when the backend's exit
    // arrives as a reset (ECONNRESET, common under load), that is between the socket's 'error'
    // and its 'close', where unpatched postgres.js cancels the write and never settles the query.
    const settle = (p: Promise<unknown>) =>
      Promise.race([
        p.then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        ),
        new Promise((r) => setTimeout(() => r('HUNG'), 5000)),
      ]);
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    const reserved = await sql.reserve();
    try {
      const [{ pid }] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await killer`select pg_terminate_backend(${pid})`;
      let second: Promise<unknown> = Promise.resolve('not sent');
      const first = await settle(reserved`select 1`.catch((err) => ((second = settle(reserved`select 1`)), Promise.reject(err))));
      const codes = [first, await second, await settle(reserved`select 1`)];
      expect(
        codes.every((c) => c === 'CONNECTION_CLOSED' || c === 'ECONNRESET' || c === '57P01'),
        codes.join(', '),
      ).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      reserved.release();
      await sql.end({ timeout: 1 });
    }
  });

  it('should reject the query whose backend was ended with the server’s error, and not replay it onto the next connection', async () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const sleeping = sql`select pg_sleep(5)`.then(
        () => 'ok',
        (e: { code?: string }) => e.code,
      );
      await new Promise((r) => setTimeout(r, 200));
      await killer`select pg_terminate_backend(${pid})`;
      // The backend's exit arrives as its FATAL error or as a reset, whichever the socket reports first.
      expect(['57P01', 'ECONNRESET']).toContain(await sleeping);
      // Unpatched, this query (the first on the reconnected connection) failed with the old connection's 57P01.
      const next = await sql<{ one: number }[]>`select 1 as one`.then(
        ([r]) => r.one,
        (e: { code?: string }) => e.code,
      );
      expect(next).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('should not leave a rejection unhandled when a connection is cut while it fetches the array types', async () => {
    // A proxy in front of the database that cuts the first connection whose client asks for the
    // array types (the query postgres.js sends right after start-up), as a backend ended then would be.
    const target = new URL(db.url);
    let cut = false;
    const proxy = net.createServer((client) => {
      const server = net.connect(Number(target.port), target.hostname);
      client.on('data', (chunk) => {
        if (!cut && chunk.includes('typarray')) {
          cut = true;
          client.destroy();
          server.destroy();
          return;
        }
        server.write(chunk);
      });
      server.on('data', (chunk) => client.write(chunk));
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
      client.on('close', () => server.destroy());
      server.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const url = new URL(db.url);
    url.port = String((proxy.address() as net.AddressInfo).port);
    const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
    try {
      // A reserved connection fetches the types without its first query attached (postgres.js
      // clears it first), so the close rejects the type query itself. The reservation is then lost
      // and never settles (upstream, not patched: patches/README.md); only the rejection is checked.
      void sql.reserve().then(
        (r) => r.release(),
        () => {},
      );
      for (let i = 0; !cut && i < 100; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      expect(cut).toBe(true);
      expect(unhandled.map((e) => (e as { code?: string }).code ?? String(e))).toEqual([]);
      const [{ one }] = await sql<{ one: number }[]>`select 1 as one`;
      expect(one).toBe(1);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await sql.end({ timeout: 1 });
      proxy.close();
    }
  });

  it('should back off from a server that refuses every login with an error, not reconnect at full speed', async () => {
    // A stand-in for pgbouncer with its server down: each login gets FATAL 08P01 and a clean close.
    const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(v), Buffer.from([0])]);
    const body = Buffer.concat([
      field('S', 'FATAL'),
      field('V', 'FATAL'),
      field('C', '08P01'),
      field('M', 'server login has been failing, try again later'),
      Buffer.from([0]),
    ]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length + 4);
    const refusal = Buffer.concat([Buffer.from('E'), len, body]);
    let logins = 0;
    const refuser = net.createServer((c) => {
      logins += 1;
      c.once('data', () => c.end(refusal));
      c.on('error', () => {});
    });
    await new Promise<void>((r) => refuser.listen(0, '127.0.0.1', r));
    const sql = postgres(`postgres://coord@127.0.0.1:${(refuser.address() as net.AddressInfo).port}/coord`, {
      max: 4,
      onnotice: () => {},
      backoff: reconnectBackoff,
    });
    try {
      // Clients retrying for 3 s, as agents retry a 503.
      const codes = new Set<string>();
      const until = Date.now() + 3000;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (Date.now() < until) await sql`select 1`.catch((e: { code?: string }) => codes.add(e.code ?? '?'));
        }),
      );
      expect([...codes]).toEqual(['08P01']);
      // Coord's backoff grows to 1 s: a few dozen logins in 3 s. Unpatched it stayed at its first step, thousands.
      expect(logins).toBeLessThan(100);
    } finally {
      await sql.end({ timeout: 1 });
      refuser.close();
    }
  });
});
