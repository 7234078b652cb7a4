/**
 * A write that reaches a server taking no writes (SQLSTATE 25006: a standby, or a primary reached
 * mid-failover) is 503 `database_unavailable` with Retry-After, not a 500: the client retries and
 * a multi-host DATABASE_URL finds the primary on its next connection (docs/operations.md, high
 * availability). Reproduced on the real database by making its sessions read-only.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

it('answers a write refused as read-only with 503 database_unavailable and Retry-After', async () => {
  const s = await t.session({ name: 'read-only' });
  // A connection of its own: every connection of the app's pool is ended, to reopen read-only.
  const admin = postgres(t.dbUrl, { max: 1, onnotice: () => {} });
  const [{ db }] = await admin<{ db: string }[]>`select current_database() as db`;
  await admin.unsafe(`alter database "${db}" set default_transaction_read_only = on`);
  try {
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${db} and pid <> pg_backend_pid()`;
    // Reads work again (the pool reconnected), so what the write gets is about the write alone.
    for (let i = 0; (await s.client.get('/v1/todos')).status !== 200; i++) if (i > 50) throw new Error('no reconnect');
    const r = await s.client.post('/v1/todos', { title: 'refused' });
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body.code).toBe('database_unavailable');
    expect(r.headers.get('retry-after')).toBe('1');
  } finally {
    await admin.unsafe(`alter database "${db}" reset default_transaction_read_only`);
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${db} and pid <> pg_backend_pid()`;
    await admin.end();
  }
});
