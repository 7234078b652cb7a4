import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

/**
 * Applies the drizzle-kit migrations in `migrations/` under a session advisory lock, so several
 * replicas starting at once migrate exactly once (drizzle's migrator takes no lock of its own:
 * three concurrent runs on a fresh database gave one success and two failures, stack.md #10).
 * Uses its own single connection, closed before returning. `migrationsFolder` is for tests that
 * build a database as an earlier release left it.
 */
export async function migrateDatabase(url: string, migrationsFolder = MIGRATIONS_DIR): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`select pg_advisory_lock(hashtextextended('coord:migrate', 0))`;
    try {
      await migrate(drizzle(sql), { migrationsFolder });
    } finally {
      await sql`select pg_advisory_unlock(hashtextextended('coord:migrate', 0))`;
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** True when every migration in `migrations/` has been applied (used by `/readyz`). */
export async function migrationsApplied(sql: postgres.Sql, expected: number): Promise<boolean> {
  try {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    return row.n >= expected;
  } catch {
    return false;
  }
}
