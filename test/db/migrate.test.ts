import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testAdminUrl } from '../helpers/db.js';

describe('migrations', () => {
  it('should migrate a fresh database exactly once when three replicas start at the same moment', async () => {
    const adminUrl = testAdminUrl();
    const name = `m_${randomBytes(5).toString('hex')}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    try {
      const results = await Promise.allSettled([migrateDatabase(u.toString()), migrateDatabase(u.toString()), migrateDatabase(u.toString())]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
      const db = postgres(u.toString(), { max: 1, onnotice: () => {} });
      const [{ n }] = await db`select count(*)::int as n from drizzle.__drizzle_migrations`;
      const [{ t }] = await db`select count(*)::int as t from information_schema.tables where table_name = 'todos'`;
      await db.end();
      expect(t).toBe(1);
      expect(n).toBeGreaterThanOrEqual(3);
      await migrateDatabase(u.toString()); // a restart is a no-op
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });

  it('should date every migration in the past and in order, so none is skipped on upgrade', () => {
    // drizzle applies a migration only if its `when` is later than the last applied one's: a
    // migration dated in the future makes every later one (dated when generated) be skipped on
    // databases that already have it, silently.
    const dir = path.join(import.meta.dirname, '../../migrations');
    const journal = JSON.parse(readFileSync(path.join(dir, 'meta/_journal.json'), 'utf8')) as { entries: { idx: number; when: number; tag: string }[] };
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.sql'))
      .sort();
    expect(journal.entries.map((e) => `${e.tag}.sql`)).toEqual(files);
    journal.entries.forEach((e, i) => {
      expect(e.idx).toBe(i);
      expect(e.when, `${e.tag} is dated in the future`).toBeLessThan(Date.now());
      if (i > 0) expect(e.when, `${e.tag} is not dated after ${journal.entries[i - 1].tag}`).toBeGreaterThan(journal.entries[i - 1].when);
    });
  });
});
