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
 *
 * Throws {@link ReadOnlyDatabaseError} when the server takes no writes (a hot standby, or
 * `default_transaction_read_only` on): Coord cannot start there, and the message says what to do.
 */
export async function migrateDatabase(url: string, migrationsFolder = MIGRATIONS_DIR): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [server] = await sql<{ standby: boolean; readOnly: string }[]>`
      select pg_is_in_recovery() as standby, current_setting('transaction_read_only') as "readOnly"`.catch((err: { code?: string }) => {
      // postgres.js's code when it closed every host's connection for not matching target_session_attrs.
      throw err.code === 'CONNECTION_DESTROYED' && /target_session_attrs=/.test(url) ? new ReadOnlyDatabaseError(true) : err;
    });
    if (server.standby || server.readOnly === 'on') throw new ReadOnlyDatabaseError(server.standby);
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

/** The database Coord was pointed at takes no writes, so it cannot migrate or serve. */
export class ReadOnlyDatabaseError extends Error {
  constructor(standby: boolean) {
    super(
      `the database at DATABASE_URL takes no writes (${standby ? 'no server it names is a primary: a hot standby is in recovery' : 'default_transaction_read_only is on'}): ` +
        'point DATABASE_URL at the primary, or name every host with target_session_attrs=primary so the primary is found ' +
        '(docs/operations.md, high availability)',
    );
    this.name = 'ReadOnlyDatabaseError';
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
