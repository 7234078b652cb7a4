/**
 * The embedded Postgres of a real server process. It stops when the server is
 * killed with SIGKILL (a watchdog), keeps its port across restarts (`pg-port`), has a random
 * superuser password kept in `pg-password` (0600) and never printed, moves a cluster made with
 * the old fixed password to a random one, and a second replica connects with the printed command.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, startEmbeddedPostgres } from '../../src/db/embedded.js';
import { bash } from '../helpers/process.js';
import { alive, killServers, postmasterPid, spawnServer, waitGone, waitReady } from '../helpers/server.js';
import { seededDataDir } from '../helpers/db.js';

const temp = mkdtempSync(path.join(os.tmpdir(), 'coord-embedded-'));
// As root the cluster runs as the `postgres` user, who must traverse the data folder's parent
// (mkdtemp makes it 0700; without this Coord would keep the cluster under /var/lib/coord).
chmodSync(temp, 0o755);
afterEach(async () => {
  await killServers();
  // A postmaster that outlived its server (the defect under test, when it regresses): stop it here.
  const left: number[] = [];
  for (const d of readdirSync(temp)) {
    const pidFile = path.join(temp, d, 'pg', 'postmaster.pid');
    if (!existsSync(pidFile)) continue;
    const pid = postmasterPid(path.dirname(pidFile));
    if (alive(pid)) left.push(pid);
  }
  for (const pid of left) process.kill(pid, 'SIGINT');
  for (const pid of left) await waitGone(pid, 10_000);
});
afterAll(() => rmSync(temp, { recursive: true, force: true }));

let n = 0;
const newDataDir = () => path.join(temp, `d${n++}`);

/** Connects as the postgres superuser with `password`: 'ok' or the SQLSTATE of the refusal. */
async function tryPassword(port: number, password: string): Promise<string> {
  const sql = postgres({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await sql`select 1`;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

describe('the embedded Postgres of a server process', () => {
  it('should stop when the server is killed with SIGKILL, and restart on the same port with a password only its 0600 file holds', async () => {
    const dataDir = seededDataDir(newDataDir());
    const first = spawnServer(await freePort(), { COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(first), first.output()).toBe(true);
    const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
    const port = Number(readFileSync(path.join(dataDir, 'pg-port'), 'utf8'));
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    expect(statSync(path.join(dataDir, 'pg-password')).mode & 0o777).toBe(0o600);
    expect(first.output()).not.toContain(password);
    expect(first.output()).toContain(`postgres://postgres:***@127.0.0.1:${port}/postgres`);
    expect(await tryPassword(port, 'postgres')).toBe('28P01'); // the old fixed password is refused
    expect(await tryPassword(port, password)).toBe('ok');

    const pm = postmasterPid(path.join(dataDir, 'pg'));
    first.child.kill('SIGKILL');
    await first.exited;
    expect(await waitGone(pm, 10_000), 'the postmaster outlived its server').toBe(true);

    const second = spawnServer(await freePort(), { COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(second), second.output()).toBe(true);
    expect(Number(readFileSync(path.join(dataDir, 'pg-port'), 'utf8'))).toBe(port);
    expect(second.output()).toContain(`127.0.0.1:${port}/postgres`);
    expect(second.output()).not.toContain('orphaned postgres'); // nothing was left to clean up
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('should let a second replica connect with the printed command and recover after the first is killed and restarted', async () => {
    const dataDir = seededDataDir(newDataDir());
    const ownerPort = await freePort();
    const owner = spawnServer(ownerPort, { COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(owner), owner.output()).toBe(true);
    // The line as printed, run by a shell: it reads the password file.
    const line = /DATABASE_URL="([^"]+)"/.exec(owner.output())?.[1];
    expect(line).toContain("$(cat '");
    const url = (await bash(`echo "${line}"`, { cwd: temp })).stdout.trim();
    const replica = spawnServer(await freePort(), { DATABASE_URL: url, COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(replica), replica.output()).toBe(true);

    const token = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const call = (method: string, p: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${replica.port}${p}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(15_000),
      });
    const s = await call('POST', '/v1/sessions', { name: 'agent' });
    expect(s.status).toBe(201);
    const { session } = (await s.json()) as { session: { id: string } };

    const pm = postmasterPid(path.join(dataDir, 'pg'));
    owner.child.kill('SIGKILL');
    await owner.exited;
    expect(await waitGone(pm, 10_000)).toBe(true);
    const during = await call('GET', `/v1/sessions/${session.id}`);
    expect(during.status).toBe(503);
    expect(((await during.json()) as { code: string }).code).toBe('database_unavailable');

    const again = spawnServer(ownerPort, { COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(again), again.output()).toBe(true);
    // The replica was not restarted: the same port and password reach the restarted cluster.
    let after = 0;
    for (let i = 0; i < 50 && after !== 200; i++) {
      after = (await call('GET', `/v1/sessions/${session.id}`)).status;
      if (after !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(after).toBe(200);
  });

  it('should say so and use another port for one run when its stored port is taken, keeping the stored one', async () => {
    const dataDir = seededDataDir(newDataDir());
    const first = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: () => {} });
    const port = first.port;
    await first.stop();
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', r));
    const logs: string[] = [];
    try {
      const second = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: (m) => logs.push(m) });
      try {
        expect(second.port).not.toBe(port);
        expect(logs.join('\n')).toContain(`its port ${port} (from ${second.portFile}) is taken by another process; using ${second.port} for this run`);
        expect(await tryPassword(second.port, readFileSync(second.passwordFile, 'utf8').trim())).toBe('ok');
      } finally {
        await second.stop();
      }
    } finally {
      await new Promise((r) => squatter.close(r));
    }
    expect(Number(readFileSync(path.join(dataDir, 'pg-port'), 'utf8'))).toBe(port);
    const third = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: () => {} });
    expect(third.port).toBe(port);
    await third.stop();
  });

  it('should give a cluster created anew beside an existing password file that password', async () => {
    const dataDir = newDataDir();
    const first = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: () => {} });
    const password = readFileSync(first.passwordFile, 'utf8').trim();
    await first.stop();
    rmSync(first.clusterDir, { recursive: true, force: true }); // e.g. an operator resetting the database
    const second = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: () => {} });
    try {
      expect(readFileSync(second.passwordFile, 'utf8').trim()).toBe(password);
      expect(await tryPassword(second.port, password)).toBe('ok');
      expect(await tryPassword(second.port, 'postgres')).toBe('28P01');
    } finally {
      await second.stop();
    }
  });

  it('should move a data folder made with the old fixed password to a random one on first start', async () => {
    // A cluster as older versions of Coord left it: password `postgres`, no pg-password file.
    const dataDir = seededDataDir(newDataDir());
    const old = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log: () => {} });
    const admin = postgres(old.url, { max: 1, onnotice: () => {} });
    await admin`alter user postgres password 'postgres'`;
    await admin.end();
    await old.stop();
    rmSync(path.join(dataDir, 'pg-password'));

    const server = spawnServer(await freePort(), { COORD_DATA_DIR: dataDir, COORD_SWEEPS: 'off' });
    expect(await waitReady(server), server.output()).toBe(true);
    const file = path.join(dataDir, 'pg-password');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.new`)).toBe(false);
    expect(await tryPassword(old.port, 'postgres')).toBe('28P01');
    expect(await tryPassword(old.port, readFileSync(file, 'utf8').trim())).toBe('ok');
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});
