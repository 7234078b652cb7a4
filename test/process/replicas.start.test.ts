/**
 * Replicas that start together on a fresh database. Three real server processes
 * start at the same moment on one empty database, round after round; every one of them must come
 * up (migrations, operator bootstrap, pg-boss start and queue creation all race here), the
 * database must end up with one operator and one sweep queue, and the operator token must work
 * on every replica. Rounds cycle through the three bootstrap situations: COORD_ADMIN_TOKEN set,
 * no token with one shared data folder, no token with a data folder per replica.
 *
 * The number of rounds follows COORD_TEST_SCALE: the bar of 20 of 20 at full scale
 * (`npm run test:stress`), 4 in `npm test`; `COORD_TEST_START_ROUNDS` sets it outright.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { testAdminUrl } from '../helpers/db.js';
import { scaled } from '../helpers/scale.js';
import { killServers, spawnServer, waitReady, type ServerProcess } from '../helpers/server.js';

const ROUNDS = Number(process.env.COORD_TEST_START_ROUNDS ?? scaled(20, 3));
const MODES = ['admin-token', 'shared-folder', 'separate-folders'] as const;
const ENV_TOKEN = `coord_test_${randomBytes(12).toString('hex')}`;

const temp = mkdtempSync(path.join(os.tmpdir(), 'coord-starts-'));
afterAll(async () => {
  await killServers();
  rmSync(temp, { recursive: true, force: true });
});

async function meStatus(port: number, token: string): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: `Bearer ${token}` } })).status;
}

describe('replicas starting together on a fresh database', () => {
  it(`should start all 3 replicas in each of ${ROUNDS} rounds, with one operator and one sweep queue`, { timeout: 30_000 + ROUNDS * 60_000 }, async () => {
    const adminUrl = testAdminUrl();
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    const failures: string[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const mode = MODES[round % MODES.length];
        const name = `starts_${randomBytes(5).toString('hex')}`;
        await admin.unsafe(`create database "${name}"`);
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        const roundDir = path.join(temp, `round-${round}`);
        const folders = [0, 1, 2].map((i) => (mode === 'separate-folders' ? path.join(roundDir, `r${i}`) : roundDir));
        for (const f of folders) mkdirSync(f, { recursive: true });
        let servers: ServerProcess[] = [];
        let ready: boolean[] = [];
        try {
          const ports = [await freePort(), await freePort(), await freePort()];
          servers = ports.map((port, i) =>
            spawnServer(port, {
              DATABASE_URL: url.toString(),
              COORD_DATA_DIR: folders[i],
              COORD_ADMIN_TOKEN: mode === 'admin-token' ? ENV_TOKEN : undefined,
              COORD_TODO_SWEEP_INTERVAL: '1s',
            }),
          );
          ready = await Promise.all(servers.map((s) => waitReady(s)));
          const down = servers.filter((_, i) => !ready[i]);
          if (down.length) {
            failures.push(`round ${round + 1} (${mode}): ${down.map((s) => s.output().trim().split('\n').slice(-3).join(' | ')).join(' ;; ')}`);
            continue;
          }

          const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
          try {
            const [{ users }] = await db<{ users: number }[]>`select count(*)::int as users from users`;
            const [{ queues }] = await db<{ queues: number }[]>`select count(*)::int as queues from pgboss.queue where name = 'coord.sweep'`;
            expect(users, `round ${round + 1} (${mode}): operators`).toBe(1);
            expect(queues, `round ${round + 1} (${mode}): sweep queues`).toBe(1);
          } finally {
            await db.end();
          }

          let token = ENV_TOKEN;
          if (mode !== 'admin-token') {
            const files = folders.map((f) => path.join(f, 'admin-token')).filter((f) => existsSync(f));
            expect(new Set(files).size, `round ${round + 1} (${mode}): token files`).toBe(1);
            token = readFileSync(files[0], 'utf8').trim();
            if (mode === 'shared-folder') for (const s of servers) expect(s.output()).toContain(files[0]);
            else expect(servers.filter((s) => s.output().includes('already has an operator')).length).toBe(2);
          }
          for (const s of servers) expect(await meStatus(s.port, token), `round ${round + 1} (${mode}): /v1/me on :${s.port}`).toBe(200);
        } finally {
          for (const s of servers) s.child.kill('SIGTERM');
          const codes = await Promise.all(servers.map((s) => s.exited));
          codes.forEach((c, i) => ready[i] && c !== 0 && failures.push(`round ${round + 1} (${mode}): :${servers[i].port} exited ${c} on SIGTERM`));
          await admin.unsafe(`drop database if exists "${name}" with (force)`);
        }
      }
    } finally {
      await admin.end();
    }
    expect(failures, `${ROUNDS - failures.length}/${ROUNDS} rounds had all 3 replicas up`).toEqual([]);
  });
});
