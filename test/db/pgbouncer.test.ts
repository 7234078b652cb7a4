/**
 * Coord behind pgbouncer in session mode, configured as docs/operations.md says (`pool_mode =
 * session`, `ignore_startup_parameters = lock_timeout`, `query_wait_timeout = 5`,
 * `server_login_retry = 1`; without the last two pgbouncer holds a query up to 120 s while its
 * server is down, and refuses logins for 15 s after it is back). When pgbouncer cannot give a client a server
 * connection it answers SQLSTATE 08P01 (a class-08 connection exception), which is 503
 * `database_unavailable` with Retry-After, like any other way of the database being unreachable;
 * a review found it answered 500 `internal_error` during a failover. Real pgbouncer (Debian's;
 * .ci/run installs it), run as the postgres OS user when the tests run as root (it refuses root).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, postgresUser } from '../../src/db/embedded.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';

const PGBOUNCER = process.env.COORD_PGBOUNCER ?? '/usr/sbin/pgbouncer';

let dir: string;
let bouncer: ChildProcess | undefined;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let t: TestApp | undefined;
let console_: postgres.Sql;
beforeAll(async () => {
  expect(existsSync(PGBOUNCER), 'pgbouncer (apt-get install pgbouncer) is needed').toBe(true);
  db = await createTestDatabase();
  const target = new URL(db.url);
  dir = mkdtempSync(path.join(os.tmpdir(), 'coord-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const server = `host=${target.hostname} port=${target.port} dbname=${target.pathname.slice(1)} user=${decodeURIComponent(target.username)} password=${decodeURIComponent(target.password)}`;
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `coord = ${server}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'admin_users = coord',
      'pool_mode = session',
      'max_client_conn = 200',
      'default_pool_size = 40',
      'ignore_startup_parameters = lock_timeout',
      'query_wait_timeout = 5',
      'server_login_retry = 1',
      '',
    ].join('\n'),
  );
  writeFileSync(path.join(dir, 'users.txt'), '"coord" ""\n');
  const user = process.getuid?.() === 0 ? postgresUser() : undefined;
  for (const f of ['pgbouncer.ini', 'users.txt']) if (user) chownSync(path.join(dir, f), user.uid, user.gids[0]);
  bouncer = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], { uid: user?.uid, gid: user?.gids[0], stdio: 'ignore' });
  const url = `postgres://coord@127.0.0.1:${port}/coord`;
  console_ = postgres(`postgres://coord@127.0.0.1:${port}/pgbouncer`, { max: 1, onnotice: () => {}, fetch_types: false, prepare: false });
  for (let i = 0; ; i++) {
    try {
      await console_.unsafe('show version');
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  // The lock wait the startup parameter would have set (docs/operations.md, connection poolers).
  const direct = postgres(db.url, { max: 1, onnotice: () => {} });
  await direct.unsafe(`alter database "${target.pathname.slice(1)}" set lock_timeout = '5s'`);
  await direct.end();
  t = await startTestApp({ dbUrl: url });
}, 60_000);
afterAll(async () => {
  await t?.close().catch(() => {});
  await console_?.end({ timeout: 1 }).catch(() => {});
  bouncer?.kill('SIGKILL');
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Coord behind pgbouncer in session mode', () => {
  it('should serve writes and claims, and answer 503 database_unavailable (not 500) while pgbouncer cannot reach the server', async () => {
    const s = await (t as TestApp).session({ name: 'behind-pgbouncer' });
    expect((await s.client.post('/v1/todos', { title: 'through pgbouncer' })).status).toBe(201);
    const next = await s.client.post('/v1/todos/next', {});
    expect(next.body.claimed).toBe(true);
    // The server gone, as pgbouncer sees it: every connection dropped, new ones held until RESUME
    // (refused with 08P01 after query_wait_timeout).
    await console_.unsafe('kill coord');
    try {
      // What pgbouncer answers now (after query_wait_timeout, 5 s): a class-08 error. By then the
      // app's pool has seen its connections dropped, so the request below meets the same answer.
      const probe = postgres((t as TestApp).dbUrl, { max: 1, onnotice: () => {} });
      const code = await probe`select 1`.then(
        () => 'answered',
        (e: { code?: string }) => e.code,
      );
      await probe.end();
      expect(code).toBe('08P01');
      const r = await s.client.post('/v1/todos', { title: 'refused' });
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body.code).toBe('database_unavailable');
      expect(r.headers.get('retry-after')).toBe('1');
    } finally {
      await console_.unsafe('resume coord');
    }
    let status = 0;
    for (let i = 0; (status = (await s.client.post('/v1/todos', { title: 'after' })).status) !== 201 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(201);
  });
});
