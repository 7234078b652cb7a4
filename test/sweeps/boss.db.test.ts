/**
 * pg-boss on Coord's driver (src/sweeps/boss.ts `bossDb`): the paths pg-boss takes through its `db`
 * adapter work as they did on pg. A fresh review found the cron's re-seeding broken: pg-boss binds
 * `JSON.stringify(jobs)` to a json parameter (`insert`, which `schedule`'s cron uses), and
 * postgres.js encoded that string a second time (`cannot call json_to_recordset on a scalar`).
 */
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { bossDb } from '../../src/sweeps/boss.js';
import { createTestDatabase } from '../helpers/db.js';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let own: ReturnType<typeof bossDb>;
let boss: PgBoss;
beforeAll(async () => {
  db = await createTestDatabase();
  own = bossDb(db.url, { dbConnectTimeoutMs: 5000, todo: { busyTimeoutMs: 5000 } } as Config);
  boss = new PgBoss({ db: own.db, schema: 'pgboss_adapter' } as PgBoss.ConstructorOptions);
  await boss.start();
});
afterAll(async () => {
  await boss?.stop({ graceful: false, wait: true });
  await own?.sql.end({ timeout: 5 });
  await db?.drop();
});

it('inserts jobs from JSON text (the cron’s path) and sends, fetches and completes one with object data', async () => {
  await boss.createQueue('adapter-q');
  await boss.insert([
    { name: 'adapter-q', data: { n: 1 } },
    { name: 'adapter-q', data: { n: 2 } },
  ]);
  const id = await boss.send('adapter-q', { n: 3, nested: { ok: true } });
  expect(id).toEqual(expect.any(String));
  const jobs = await boss.fetch<{ n: number }>('adapter-q', { batchSize: 10 });
  expect(jobs.map((j) => j.data.n).sort()).toEqual([1, 2, 3]);
  await boss.complete(
    'adapter-q',
    jobs.map((j) => j.id),
  );
  expect((await boss.getJobById('adapter-q', id as string))?.state).toBe('completed');
});

it('schedules a cron job (stored through the same JSON path)', async () => {
  await boss.createQueue('adapter-cron');
  await boss.schedule('adapter-cron', '* * * * *', { k: 'v' });
  expect((await boss.getSchedules()).map((s) => s.name)).toContain('adapter-cron');
});
