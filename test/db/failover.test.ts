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
import { debianPgBin, startPgPair, type PgPair } from '../../chaos/pg-pair.js';
import { openDb, type Sql } from '../../src/db/client.js';

let dir: string;
let pair: PgPair;
let sql: Sql;
beforeAll(async () => {
  expect(debianPgBin(), 'Debian’s PostgreSQL (apt-get install postgresql) is needed for the standby').toBeDefined();
  dir = mkdtempSync(path.join(os.tmpdir(), 'coord-failover-'));
  chmodSync(dir, 0o755); // the postgres OS user runs the servers when the tests run as root
  pair = await startPgPair(dir);
  sql = openDb(pair.url, { max: 6 });
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  pair?.stop();
  rmSync(dir, { recursive: true, force: true });
});

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
});
