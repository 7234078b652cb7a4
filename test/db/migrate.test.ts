import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { describe, expect, it, inject } from 'vitest';
import { migrateDatabase } from '../../src/db/migrate.js';

describe('migrations', () => {
  it('should migrate a fresh database exactly once when three replicas start at the same moment', async () => {
    const adminUrl = inject('adminUrl');
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
});
