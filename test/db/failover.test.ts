/**
 * Coord's pool on a primary with a hot standby (chaos/pg-pair.ts, Debian's PostgreSQL), its URL
 * naming both hosts with `target_session_attrs=primary` (docs/operations.md, high availability).
 * When every connection to the live primary is ended (a network blip, both servers alive), the
 * pool reconnects, trying the hosts in turn, and must land on the primary again. Unpatched
 * postgres.js 3.4.9 replayed the ended connection's FATAL error onto its next connection's first
 * answer, which skipped the `target_session_attrs` check (porsager/postgres#1223): connections
 * stayed on the standby, every write failed read-only (25006), and the event hub read the standby,
 * whose horizon cannot see the primary's writers, so followers missed events.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { debianPgBin, startPgPair, type PgPair } from '../../chaos/pg-pair.js';
import { buildApp } from '../../src/app.js';
import { openDb, type Sql } from '../../src/db/client.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let dir: string;
let pair: PgPair;
let sql: Sql;
let t: TestApp | undefined;
beforeAll(async () => {
  expect(debianPgBin(), 'Debian’s PostgreSQL (apt-get install postgresql) is needed for the standby').toBeDefined();
  dir = mkdtempSync(path.join(os.tmpdir(), 'coord-failover-'));
  chmodSync(dir, 0o755); // the postgres OS user runs the servers when the tests run as root
  pair = await startPgPair(dir);
  sql = openDb(pair.url, { max: 6 });
}, 120_000);
afterAll(async () => {
  // The servers are stopped whatever the rest does: a close that hangs must not leave them running.
  const bounded = (p: Promise<unknown> | undefined) => Promise.race([p?.catch(() => {}), new Promise((r) => setTimeout(r, 10_000))]);
  try {
    await bounded(t?.close());
    await bounded(sql?.end({ timeout: 1 }));
  } finally {
    pair?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

/** Where each of `n` concurrent queries ran: the server's port and whether it is a standby. */
async function whereQueriesRun(n: number): Promise<string[]> {
  const rows = await Promise.all(
    Array.from(
      { length: n },
      () => sql<{ at: string }[]>`select inet_server_port() || (case when pg_is_in_recovery() then ' standby' else ' primary' end) as at, pg_sleep(0.02)`,
    ),
  );
  return [...new Set(rows.map(([r]) => r.at))];
}

describe('a pool on a primary and a hot standby', () => {
  it('should come back to the primary after every connection to it was ended, none left on the standby', async () => {
    const primary = `${new URL(pair.urlOf(0)).port} primary`;
    expect(await whereQueriesRun(12)).toEqual([primary]);
    // Queries in flight on every connection when they are ended, as under load.
    let stop = false;
    const errors = new Set<string>();
    const load = Array.from({ length: 12 }, async () => {
      while (!stop) await sql`select pg_sleep(0.005)`.catch((e: { code?: string }) => errors.add(e.code ?? '?'));
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await pair.dropClients()).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await Promise.all(load);
    expect([...errors].filter((c) => !['57P01', 'ECONNRESET', 'CONNECTION_CLOSED'].includes(c))).toEqual([]);
    // Every connection of the pool: on the primary, and writing.
    expect(await whereQueriesRun(24)).toEqual([primary]);
    const [{ ok }] = await sql<{ ok: number }[]>`select count(*)::int as ok from (select txid_current()) t`;
    expect(ok).toBe(1);
  }, 60_000);

  it('should find the primary when the standby is named first with target_session_attrs=primary, which read-write does not', async () => {
    const [p, st] = [new URL(pair.urlOf(0)).port, new URL(pair.urlOf(1)).port];
    const where = async (attrs: string) => {
      const c = postgres(`postgres://coord@127.0.0.1:${st},127.0.0.1:${p}/coord?target_session_attrs=${attrs}`, { max: 1, onnotice: () => {} });
      try {
        const [{ standby }] = await c<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`;
        return standby ? 'standby' : 'primary';
      } finally {
        await c.end({ timeout: 1 });
      }
    };
    expect(await where('primary')).toBe('primary');
    // Why the docs say `primary`: postgres.js judges read-write by default_transaction_read_only, off on a hot standby.
    expect(await where('read-write')).toBe('standby');
  });

  it('should refuse to start without a primary, with a message that says why and what to do', async () => {
    const [p, st] = [new URL(pair.urlOf(0)).port, new URL(pair.urlOf(1)).port];
    await expect(migrateDatabase(pair.urlOf(1))).rejects.toThrow(
      /cannot use the database at DATABASE_URL: the server it reached is a hot standby, in recovery, and takes no writes; point it at the primary, or name every host with target_session_attrs=primary/,
    );
    await expect(migrateDatabase(`${pair.urlOf(1)}?target_session_attrs=primary`)).rejects.toThrow(
      /the server it names is a hot standby \(target_session_attrs=primary\); point it at the primary/,
    );
    await expect(migrateDatabase(`postgres://coord@127.0.0.1:${st},127.0.0.1:${p}/coord?target_session_attrs=any`)).rejects.toThrow(
      /it sets target_session_attrs=any, but Coord writes; use target_session_attrs=primary/,
    );
  });

  it('should answer 503 on /readyz and for writes, never 500, when its connections reach the standby (target_session_attrs=read-write)', async () => {
    await migrateDatabase(pair.url);
    t = await startTestApp({ dbUrl: pair.url });
    const token = (await t.session({ name: 'on-the-primary' })).token;
    // The attribute the docs warn against: after the blip each connection tries the next host, the standby, and keeps it.
    const [p, st] = [new URL(pair.urlOf(0)).port, new URL(pair.urlOf(1)).port];
    const rw = openDb(`postgres://coord@127.0.0.1:${p},127.0.0.1:${st}/coord?target_session_attrs=read-write`, { max: 2 });
    const app = await buildApp({ sql: rw, config: t.config });
    try {
      await Promise.all([rw`select pg_sleep(0.05)`, rw`select pg_sleep(0.05)`]);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      await pair.dropClients();
      for (let i = 0; ; i++) {
        const rows = await Promise.all([rw`select pg_is_in_recovery() as s, pg_sleep(0.05)`, rw`select pg_is_in_recovery() as s, pg_sleep(0.05)`]).catch(
          () => [],
        );
        if (rows.length && rows.every(([r]) => r.s)) break;
        if (i > 100) throw new Error('the connections never reached the standby');
        await new Promise((r) => setTimeout(r, 20));
      }
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      const write = await app.inject({ method: 'POST', url: '/v1/todos', headers: { authorization: `Bearer ${token}` }, payload: { title: 'refused' } });
      expect(write.statusCode, write.body).toBe(503);
      expect(write.json().code).toBe('database_unavailable');
      expect(write.headers['retry-after']).toBe('1');
    } finally {
      await app.close();
      await rw.end({ timeout: 1 });
    }
  });

  // Last: it kills the primary.
  it('should answer 503 while no primary is up, not hang (porsager/postgres#1174), and write again once the standby is promoted', async () => {
    const app = t as TestApp;
    const s = await app.session({ name: 'across-the-failover' });
    const settle = (p: Promise<{ status: number }>) => Promise.race([p.then((r) => r.status), new Promise((r) => setTimeout(() => r('HUNG'), 10_000))]);
    expect(await settle(s.client.post('/v1/todos', { title: 'before' }))).toBe(201);
    pair.killPrimary();
    // Unpatched, a connection attempt went round the two hosts (one down, one a standby) until a primary appeared.
    const during = await settle(s.client.post('/v1/todos', { title: 'during' }));
    expect(during).toBe(503);
    // Whichever host is tried last (the dead one refuses, the standby is closed for not being a primary), the message says what it found.
    await expect(migrateDatabase(pair.url)).rejects.toThrow(
      /none of the 2 servers it names answered as a primary \(the last one tried (is a hot standby|said: .*ECONNREFUSED.*)\); start Coord again once one of them runs as the primary/,
    );
    await pair.promoteStandby();
    let after: unknown;
    for (let i = 0; (after = await settle(s.client.post('/v1/todos', { title: 'after' }))) !== 201 && i < 50; i++) {
      expect(after).toBe(503);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(after).toBe(201);
  });
});
